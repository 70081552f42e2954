"""``goaicore say``: ask a question in a conversation and print the reply."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from goaicore.records import ChatReply


def register(subparsers: Any) -> None:
    say: argparse.ArgumentParser = subparsers.add_parser(
        "say", help="send a chat request and wait for the reply"
    )
    say.add_argument("conversation", metavar="CONV", help="conversation id")
    say.add_argument("text", metavar="TEXT", help="the user's message")
    say.add_argument("--system", help="system prompt for this turn (never stored)")
    say.add_argument(
        "--timeout",
        type=positive_seconds,
        default=60.0,
        help="seconds to wait (default: %(default)s)",
    )
    say.add_argument(
        "--request-id",
        metavar="ID",
        help="the request's id; the same id again gets the same reply (default: a new one)",
    )
    say.set_defaults(handler=handle_say)


def positive_seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {raw!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def handle_say(args: argparse.Namespace) -> int:
    from goaicore.cli.store import kafka_store
    from goaicore.store.errors import ReplyTimeout

    store, _ = kafka_store()
    with store:
        try:
            reply = store.ask(
                args.conversation,
                args.text,
                timeout=args.timeout,
                system=args.system,
                request_id=args.request_id,
            )
        except ReplyTimeout as err:
            print(f"goaicore: {err}", file=sys.stderr)
            return 1
    return print_reply(reply)


def print_reply(reply: ChatReply) -> int:
    """Print a reply's text (exit 0), or its failure on stderr (exit 1).

    A reply cancelled by request is not a failure: its text, what the turn generated
    until then, is printed, and stderr says it was cut short.
    """
    from goaicore.records import ReplyStatus

    if reply.status is ReplyStatus.OK:
        print(reply.text or "")
        return 0
    if reply.status is ReplyStatus.CANCELLED:
        print(reply.text or "")
        print("goaicore: cancelled: the turn was stopped by request", file=sys.stderr)
        return 0
    print(f"goaicore: {reply.status.value}: {reply.error or 'no detail'}", file=sys.stderr)
    return 1
