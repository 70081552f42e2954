"""``goaicore publish-event`` and ``goaicore history``: write to and read from the log."""

from __future__ import annotations

import argparse
from typing import Any

from goaicore.cli.args import key_value
from goaicore.cli.audit import add_history_options, history_from_db
from goaicore.cli.output import add_json_option, print_json
from goaicore.cli.render import describe_event
from goaicore.cli.store import kafka_store
from goaicore.errors import InputError
from goaicore.records import new_event
from goaicore.store.errors import NotAcknowledged


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
    publish.add_argument(
        "--event-id",
        metavar="ID",
        help="the event's id (default: a new one); give the one a publish not acknowledged "
        "printed to try it again without a second copy",
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
    from goaicore.store.inputs import game_event_body

    body = game_event_body(args.text, args.kind, dict(args.attr))
    event = new_event(args.conversation, body, source="cli", event_id=args.event_id)
    store, kafka = kafka_store()
    with store:
        try:
            position = store.append(args.conversation, event).position
        except NotAcknowledged as err:
            raise NotAcknowledged(
                f"{str(err).split(';')[0]}; event {event.event_id} may still be appended once "
                f"the broker is back: run this again with --event-id {event.event_id} "
                "(applied once), never without it",
                err.events,
            ) from None
    if position.topic == kafka.settings.topic("intake"):
        print(f"published to {position}: the worker that owns it seals it into the log")
    else:
        print(f"published to {position}")
    return 0


def handle_history(args: argparse.Namespace) -> int:
    if args.from_db:
        return history_from_db(args)
    if args.type or args.since or args.until:
        raise InputError("history: --type, --since and --until need --from-db")
    store, _ = kafka_store()
    with store:
        read = store.read(args.conversation, snapshot=False)
    if args.json:
        events = [
            {"partition": e.partition, "offset": e.offset, "event": e.event} for e in read.events
        ]
        print_json(
            {"conversation_id": args.conversation, "events": events, "skipped": read.skipped}
        )
        return 0
    for logged in read.events:
        print(f"{logged.offset:>8} {describe_event(logged.event)}")
    note = f", {read.skipped} undecodable skipped" if read.skipped else ""
    print(f"{len(read.events)} events{note}")
    return 0
