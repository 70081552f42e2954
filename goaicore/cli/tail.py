"""``goaicore tail``: follow a topic, one decoded line per record."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from goaicore.cli.args import POSITIVE, seconds
from goaicore.cli.output import add_json_option, print_json
from goaicore.cli.render import describe
from goaicore.kafka.topics import TOPICS


def register(subparsers: Any) -> None:
    tail: argparse.ArgumentParser = subparsers.add_parser(
        "tail", help="print a topic's records as they arrive, one line each"
    )
    tail.add_argument(
        "--topic",
        choices=[t.name for t in TOPICS],
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
    from goaicore.config import Settings
    from goaicore.kafka.connection import make_consumer, topic_partitions

    settings = Settings()
    topic = settings.topic(args.topic)
    consumer = make_consumer(settings)
    try:
        assigned = topic_partitions(consumer, topic)
        consumer.assign(assigned)
        if args.from_beginning:
            consumer.seek_to_beginning(*assigned)
        else:
            consumer.seek_to_end(*assigned)
        printed = 0
        last = time.monotonic()
        while args.max is None or printed < args.max:
            batches = consumer.poll(timeout_ms=200)
            for records in batches.values():
                for record in records:
                    if args.max is not None and printed >= args.max:
                        break
                    if args.json:
                        print_json(_as_json(args.topic, record), line=True)
                    else:
                        print(f"{record.partition}@{record.offset} {_line(args.topic, record)}")
                        sys.stdout.flush()
                    printed += 1
                    last = time.monotonic()
            if args.idle_timeout is not None and time.monotonic() - last > args.idle_timeout:
                break
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()
    return 0


def _line(topic: str, record: Any) -> str:
    from goaicore.clients.deadletter import DeadLetter
    from goaicore.records.avro.api import decode
    from goaicore.records.avro.errors import DecodeError

    if topic == "dead-letters":
        letter = DeadLetter.from_record(record)
        return (
            f"dead letter from {letter.topic}[{letter.partition}]@{letter.offset}"
            f" ({letter.reason}): {letter.message}"
        )
    if record.value is None and record.key is not None:  # compacted topics: removed, erased
        return f"tombstone {bytes(record.key).decode('utf-8', 'replace')}"
    try:
        return describe(decode(record.value))
    except DecodeError as err:
        return f"undecodable ({err.reason}): {err.message}"


def _as_json(topic: str, record: Any) -> dict[str, Any]:
    """One record as a JSON object: its position and the decoded record, the dead letter's
    headers, or why it does not decode."""
    from goaicore.clients.deadletter import DeadLetter
    from goaicore.records.avro.api import decode
    from goaicore.records.avro.errors import DecodeError

    where: dict[str, Any] = {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
    }
    if topic == "dead-letters":
        letter = DeadLetter.from_record(record)
        where["dead_letter"] = {
            "reason": letter.reason,
            "message": letter.message,
            "topic": letter.topic,
            "partition": letter.partition,
            "offset": letter.offset,
            "consumer": letter.consumer,
        }
        return where
    try:
        decoded = decode(record.value)
    except DecodeError as err:
        where["undecodable"] = {"reason": err.reason, "message": err.message}
        return where
    where["type"] = type(decoded).__name__
    where["record"] = decoded
    return where
