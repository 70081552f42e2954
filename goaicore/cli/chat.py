"""``goaicore say``: ask a question in a conversation and print the reply."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from goaicore.cli.args import POSITIVE_SECONDS

if TYPE_CHECKING:
    from goaicore.records import ChatReply
    from goaicore.store.reply_streams import StreamedReply


def register(subparsers: Any) -> None:
    say: argparse.ArgumentParser = subparsers.add_parser(
        "say", help="send a chat request and wait for the reply"
    )
    say.add_argument("conversation", metavar="CONV", help="conversation id")
    say.add_argument("text", metavar="TEXT", help="the user's message")
    say.add_argument("--system", help="system prompt for this turn (never stored)")
    say.add_argument(
        "--timeout",
        type=POSITIVE_SECONDS,
        default=60.0,
        help="seconds to wait (default: %(default)s)",
    )
    say.add_argument(
        "--request-id",
        metavar="ID",
        help="the request's id; the same id again gets the same reply (default: a new one)",
    )
    say.add_argument(
        "--stream",
        action="store_true",
        help="print the reply as it is generated (tool calls on stderr)",
    )
    say.set_defaults(handler=handle_say)


def handle_say(args: argparse.Namespace) -> int:
    from goaicore.cli.store import kafka_store
    from goaicore.store.errors import ReplyTimeout

    store, _ = kafka_store()
    with store:
        try:
            if args.stream:
                return print_stream(
                    store.ask_stream(
                        args.conversation,
                        args.text,
                        timeout=args.timeout,
                        system=args.system,
                        request_id=args.request_id,
                    )
                )
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


def print_stream(items: Iterable[StreamedReply]) -> int:
    """Print the text as it comes (tool calls and restarts on stderr), then end the
    line; a failed reply as ``print_reply`` prints it."""
    from goaicore.conversation.progress import TextDelta, ToolCallFinished, ToolCallStarted
    from goaicore.records import ChatReply
    from goaicore.store.reply_streams import Restarted

    for item in items:
        if isinstance(item, TextDelta):
            sys.stdout.write(item.text)
            sys.stdout.flush()
        elif isinstance(item, ToolCallStarted):
            print(f"[tool {item.name}({item.arguments})]", file=sys.stderr, flush=True)
        elif isinstance(item, ToolCallFinished):
            print(f"[tool {item.name} returned]", file=sys.stderr, flush=True)
        elif isinstance(item, Restarted):
            print("\n[restarted: the turn runs again]", file=sys.stderr, flush=True)
        elif isinstance(item, ChatReply):
            print()
            return print_reply(item, text_shown=True)
    return 1


def print_reply(reply: ChatReply, text_shown: bool = False) -> int:
    """Print a reply's text (exit 0; ``text_shown``: it was streamed already), or its
    failure on stderr (exit 1).

    A reply cancelled by request is not a failure: its text, what the turn generated
    until then, is printed, and stderr says it was cut short.
    """
    from goaicore.records import ReplyStatus

    if reply.status in (ReplyStatus.OK, ReplyStatus.CANCELLED) and not text_shown:
        print(reply.text or "")
    if reply.status is ReplyStatus.OK:
        return 0
    if reply.status is ReplyStatus.CANCELLED:
        print("goaicore: cancelled: the turn was stopped by request", file=sys.stderr)
        return 0
    print(f"goaicore: {reply.status.value}: {reply.error or 'no detail'}", file=sys.stderr)
    return 1
