"""``goaicore publish-event`` and ``goaicore history``: write to and read from the log."""

from __future__ import annotations

import argparse
from typing import Any

from goaicore.cli.args import key_value
from goaicore.cli.audit import add_history_options, history_from_db
from goaicore.cli.output import add_json_option, print_json
from goaicore.cli.render import describe_event
from goaicore.errors import InputError


def register(subparsers: Any) -> None:
    publish: argparse.ArgumentParser = subparsers.add_parser(
        "publish-event", help="append a game event to a conversation"
    )
    publish.add_argument("conversation", metavar="CONV", help="conversation id")
    publish.add_argument("text", metavar="TEXT", help="what happened, as the model will read it")
    publish.add_argument("--kind", default="game", help="event kind (default: %(default)s)")
    publish.add_argument(
        "--attr",
        action="append",
        default=[],
        type=key_value,
        metavar="KEY=VALUE",
        help="an attribute (repeatable)",
    )
    publish.set_defaults(handler=handle_publish)

    history: argparse.ArgumentParser = subparsers.add_parser(
        "history", help="a conversation's events, read from the log"
    )
    history.add_argument("conversation", metavar="CONV", help="conversation id")
    add_history_options(history)
    add_json_option(history)
    history.set_defaults(handler=handle_history)


def handle_publish(args: argparse.Namespace) -> int:
    from goaicore.clients import EventPublisher

    with EventPublisher(source="cli") as publisher:
        position = publisher.game_event(
            args.conversation, args.text, kind=args.kind, attributes=dict(args.attr)
        )
    if position.topic == publisher.settings.topic("intake"):
        print(f"published to {position}: the worker that owns it seals it into the log")
    else:
        print(f"published to {position}")
    return 0


def handle_history(args: argparse.Namespace) -> int:
    if args.from_db:
        return history_from_db(args)
    if args.type or args.since or args.until:
        raise InputError("history: --type, --since and --until need --from-db")
    from goaicore.clients import HistoryReader

    with HistoryReader() as reader:
        if args.json:
            events = [
                {"partition": e.partition, "offset": e.offset, "event": e.event}
                for e in reader.logged_events(args.conversation)
            ]
            print_json(
                {"conversation_id": args.conversation, "events": events, "skipped": reader.skipped}
            )
            return 0
        count = 0
        for logged in reader.logged_events(args.conversation):
            print(f"{logged.offset:>8} {describe_event(logged.event)}")
            count += 1
        skipped = reader.skipped
    note = f", {skipped} undecodable skipped" if skipped else ""
    print(f"{count} events{note}")
    return 0
