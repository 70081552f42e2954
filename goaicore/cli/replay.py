"""``goaicore replay`` and ``goaicore verify``: the log folded again, and checked."""

from __future__ import annotations

import argparse
from typing import Any

from goaicore.cli.args import OFFSET, POSITIVE, moment
from goaicore.cli.output import add_json_option, print_json
from goaicore.cli.render import clip, print_report
from goaicore.errors import InputError


def register(subparsers: Any) -> None:
    replay: argparse.ArgumentParser = subparsers.add_parser(
        "replay", help="fold a conversation from the log and print its state and transcript"
    )
    replay.add_argument("conversation", metavar="CONV")
    until = replay.add_mutually_exclusive_group()
    until.add_argument("--until-offset", type=OFFSET, metavar="N", help="last log offset to apply")
    until.add_argument(
        "--as-of", type=moment, metavar="TIME", help="ISO time: events that occurred by then"
    )
    add_json_option(replay)
    replay.set_defaults(handler=handle_replay)

    verify: argparse.ArgumentParser = subparsers.add_parser(
        "verify", help="check every stored snapshot against a replay of the log"
    )
    verify.add_argument("conversations", nargs="*", metavar="CONV", help="default: all")
    verify.add_argument(
        "--db",
        action="store_true",
        help="check the snapshots stored in PostgreSQL against the stored events instead",
    )
    verify.add_argument(
        "--processes",
        type=POSITIVE,
        metavar="N",
        help="processes sharing the log's partitions (default: one per core)",
    )
    add_json_option(verify)
    verify.set_defaults(handler=handle_verify)


def handle_replay(args: argparse.Namespace) -> int:
    from goaicore.replay.log import replay_from_log
    from goaicore.settings import Settings

    result = replay_from_log(Settings(), args.conversation, args.until_offset, args.as_of)
    snapshot = result.snapshot
    if args.json:
        print_json({"conversation_id": args.conversation, "snapshot": snapshot})
        return 0
    if snapshot is None:
        print(f"no events for {args.conversation}")
        return 0
    position = snapshot.last_position
    print(f"conversation {snapshot.conversation_id}")
    if position is not None:
        print(f"  last applied: partition {position.partition} offset {position.offset}")
    print(f"  events applied {snapshot.event_count}, duplicates {snapshot.duplicate_count}")
    print(f"  messages in history {len(snapshot.messages)} (ever added {snapshot.message_count})")
    print(f"  tokens prompt {snapshot.prompt_tokens} completion {snapshot.completion_tokens}")
    if snapshot.deleted:
        print("  deleted")
    if snapshot.summary:
        print(f"  summary: {clip(snapshot.summary)}")
    for anomaly in snapshot.anomalies:
        print(f"  anomaly: {anomaly}")
    print("transcript:")
    for message in snapshot.messages:
        calls = "".join(f" →{c.name}({clip(c.arguments, 60)})" for c in message.tool_calls)
        print(f"  {message.role:>9}: {clip(message.text)}{calls}")
    return 0


def handle_verify(args: argparse.Namespace) -> int:
    if args.db:
        if args.processes is not None:
            raise InputError("--processes applies to a verify against the log, not --db")
        from goaicore.cli.audit import verify_from_db

        return verify_from_db(args)

    from goaicore.replay.verify_shards import default_processes, verify_against_log
    from goaicore.settings import Settings

    processes = args.processes or default_processes()
    result = verify_against_log(Settings(), args.conversations, processes=processes)
    return print_report(result.report, as_json=args.json)
