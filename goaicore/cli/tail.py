"""``goaicore tail``: follow a topic, one decoded line per record."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from goaicore.cli.args import POSITIVE, seconds
from goaicore.cli.output import add_json_option, print_json
from goaicore.cli.render import describe
from goaicore.replay.tail import TOPIC_NAMES

if TYPE_CHECKING:
    from goaicore.replay.tail import Tailed


def register(subparsers: Any) -> None:
    tail: argparse.ArgumentParser = subparsers.add_parser(
        "tail", help="print a topic's records as they arrive, one line each"
    )
    tail.add_argument(
        "--topic",
        choices=TOPIC_NAMES,
        default="events",
        help="which topic (default: %(default)s)",
    )
    tail.add_argument("--from-beginning", action="store_true", help="start at the oldest record")
    tail.add_argument(
        "--max", type=POSITIVE, default=None, metavar="N", help="stop after N records"
    )
    tail.add_argument(
        "--idle-timeout",
        type=seconds(0.1),
        default=None,
        metavar="SECONDS",
        help="stop after this long without a record (default: follow until Ctrl-C)",
    )
    add_json_option(tail, lines=True)
    tail.set_defaults(handler=handle_tail)


def handle_tail(args: argparse.Namespace) -> int:
    from goaicore.replay.tail import tail
    from goaicore.settings import Settings

    followed = tail(Settings(), args.topic, args.from_beginning, args.idle_timeout)
    try:
        for printed, tailed in enumerate(followed, start=1):
            if args.json:
                print_json(_as_json(tailed), line=True)
            else:
                print(f"{tailed.partition}@{tailed.offset} {_line(tailed)}")
                sys.stdout.flush()
            if args.max is not None and printed >= args.max:
                break
    except KeyboardInterrupt:
        pass
    finally:
        followed.close()
    return 0


def _line(tailed: Tailed) -> str:
    if tailed.dead_letter is not None:
        letter = tailed.dead_letter
        return (
            f"dead letter from {letter.topic}[{letter.partition}]@{letter.offset}"
            f" ({letter.reason}): {letter.message}"
        )
    if tailed.tombstone is not None:
        return f"tombstone {tailed.tombstone}"
    if tailed.undecodable is not None:
        reason, message = tailed.undecodable
        return f"undecodable ({reason}): {message}"
    assert tailed.record is not None  # a Tailed holds exactly one of the four
    return describe(tailed.record)


def _as_json(tailed: Tailed) -> dict[str, Any]:
    """One record as a JSON object: its position and the decoded record, the dead letter's
    headers, or why it does not decode."""
    where: dict[str, Any] = {
        "topic": tailed.topic,
        "partition": tailed.partition,
        "offset": tailed.offset,
    }
    letter = tailed.dead_letter
    if letter is not None:
        where["dead_letter"] = {
            "reason": letter.reason,
            "message": letter.message,
            "topic": letter.topic,
            "partition": letter.partition,
            "offset": letter.offset,
            "consumer": letter.consumer,
        }
        return where
    if tailed.tombstone is not None:  # as before, undecodable; and now with its key
        where["tombstone"] = tailed.tombstone
        where["undecodable"] = {"reason": "empty", "message": "no payload (a tombstone?)"}
        return where
    if tailed.undecodable is not None:
        reason, message = tailed.undecodable
        where["undecodable"] = {"reason": reason, "message": message}
        return where
    where["type"] = type(tailed.record).__name__
    where["record"] = tailed.record
    return where
