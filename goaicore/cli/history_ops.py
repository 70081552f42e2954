"""``goaicore undo | regenerate | rewind | fork | meta | delete | erase``: history
operations, each an event appended to the log (nothing is removed from it; erasure
destroys the key its sealed content was sealed under)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from goaicore.cli.args import OFFSET, POSITIVE_SECONDS, days, integer, key_value, moment
from goaicore.cli.chat import print_reply
from goaicore.cli.output import add_json_option, print_json
from goaicore.records.jsonable import jsonable
from goaicore.records.validation import InvalidInputError

if TYPE_CHECKING:
    from goaicore.store.history_operations import Rewound


def register(subparsers: Any) -> None:
    undo: argparse.ArgumentParser = subparsers.add_parser(
        "undo", help="rewind a conversation to just before its last user message"
    )
    undo.add_argument("conversation", metavar="CONV")
    add_json_option(undo)
    undo.set_defaults(handler=handle_undo)

    regenerate: argparse.ArgumentParser = subparsers.add_parser(
        "regenerate", help="undo the last exchange and ask its user message again"
    )
    regenerate.add_argument("conversation", metavar="CONV")
    regenerate.add_argument(
        "--timeout", type=POSITIVE_SECONDS, default=60.0, help="seconds to wait for the reply"
    )
    regenerate.set_defaults(handler=handle_regenerate)

    rewind: argparse.ArgumentParser = subparsers.add_parser(
        "rewind", help="make a conversation's history what it was at a log offset"
    )
    rewind.add_argument("conversation", metavar="CONV")
    rewind.add_argument(
        "--to-offset",
        type=integer(-1),
        required=True,
        metavar="N",
        help="keep the conversation's events up to this offset (inclusive; -1: none)",
    )
    add_json_option(rewind)
    rewind.set_defaults(handler=handle_rewind)

    fork: argparse.ArgumentParser = subparsers.add_parser(
        "fork", help="start a new conversation from another's history at an offset or time"
    )
    fork.add_argument("source", metavar="SRC")
    fork.add_argument("--to", required=True, metavar="NEW", help="the new conversation's id")
    at = fork.add_mutually_exclusive_group()
    at.add_argument("--at", type=OFFSET, metavar="OFFSET", help="SRC's events below this offset")
    at.add_argument(
        "--as-of", type=moment, metavar="TIME", help="SRC's events up to the first after TIME"
    )
    add_json_option(fork)
    fork.set_defaults(handler=handle_fork)

    meta: argparse.ArgumentParser = subparsers.add_parser(
        "meta", help="set a conversation's title, owner, tags or attributes"
    )
    meta.add_argument("conversation", metavar="CONV")
    meta.add_argument("--title", help="the title ('' removes it)")
    meta.add_argument("--owner", help="the owner ('' removes it)")
    meta.add_argument(
        "--tags", metavar="TAG,...", help="the tags, comma-separated, replacing them ('' clears)"
    )
    meta.add_argument(
        "--set",
        action="append",
        default=[],
        type=key_value,
        metavar="KEY=VALUE",
        help="set an attribute (repeatable)",
    )
    meta.add_argument(
        "--unset", action="append", default=[], metavar="KEY", help="remove an attribute"
    )
    add_json_option(meta)
    meta.set_defaults(handler=handle_meta)

    delete: argparse.ArgumentParser = subparsers.add_parser(
        "delete",
        help="delete a conversation: its history and metadata leave the snapshot "
        "(the log keeps its events)",
    )
    delete.add_argument("conversation", metavar="CONV")
    delete.add_argument("--reason", default="", help="why, kept in the log")
    add_json_option(delete)
    delete.set_defaults(handler=handle_delete)

    erase: argparse.ArgumentParser = subparsers.add_parser(
        "erase",
        help="erase a conversation's content: its data key is destroyed, so no sealed copy "
        "can be read again; ids, types, times, token counts and costs stay",
    )
    erase.add_argument("conversation", metavar="CONV", nargs="?")
    erase.add_argument("--reason", default="", help="why, kept in the log (not content)")
    erase.add_argument(
        "--idle-days",
        type=days(),
        metavar="DAYS",
        help="instead of CONV: every conversation whose last event is older than DAYS "
        "(a retention policy); lists them, and erases them only with --yes",
    )
    erase.add_argument("--yes", action="store_true", help="with --idle-days: erase them")
    erase.add_argument(
        "--timeout",
        type=POSITIVE_SECONDS,
        default=30.0,
        help="seconds to wait for the worker to destroy the key (default 30)",
    )
    add_json_option(erase)
    erase.set_defaults(handler=handle_erase)


def handle_undo(args: argparse.Namespace) -> int:
    from goaicore.store.history_operations import HistoryOperations

    with HistoryOperations() as ops:
        undone = ops.undo(args.conversation)
    return _print_rewound(args, "undone", undone, f"; undone: {undone.text!r}")


def handle_regenerate(args: argparse.Namespace) -> int:
    from goaicore.cli.store import kafka_store
    from goaicore.sync import run_sync

    store, kafka = kafka_store()
    with store:  # the store's regenerate (the undo goes with its turn), from synchronous code
        reply = run_sync(kafka.regenerate(args.conversation, timeout=args.timeout))
    return print_reply(reply)


def handle_rewind(args: argparse.Namespace) -> int:
    from goaicore.store.history_operations import HistoryOperations

    with HistoryOperations() as ops:
        rewound = ops.rewind(args.conversation, args.to_offset)
    return _print_rewound(args, "rewound", rewound)


def _print_rewound(args: argparse.Namespace, key: str, rewound: Rewound, more: str = "") -> int:
    if args.json:
        print_json({"conversation_id": args.conversation, key: rewound})
    else:
        print(
            f"rewound to offset {rewound.until_offset} ({rewound.messages} messages kept) "
            f"at {rewound.position}{more}"
        )
    return 0


def handle_fork(args: argparse.Namespace) -> int:
    from goaicore.store.history_operations import HistoryOperations

    with HistoryOperations() as ops:
        forked = ops.fork(args.source, args.to, before_offset=args.at, as_of=args.as_of)
    if args.json:
        print_json({"source": args.source, "conversation_id": args.to, "forked": forked})
    else:
        print(
            f"forked {args.source} up to offset {forked.until_offset} into {args.to} "
            f"({forked.messages} messages) at {forked.position}"
        )
    return 0


def handle_meta(args: argparse.Namespace) -> int:
    from goaicore.store.history_operations import HistoryOperations

    tags = None if args.tags is None else [t.strip() for t in args.tags.split(",") if t.strip()]
    attributes: dict[str, str | None] = {key: None for key in args.unset}
    attributes.update(dict(args.set))
    with HistoryOperations() as ops:
        position = ops.set_metadata(
            args.conversation, title=args.title, owner=args.owner, tags=tags, attributes=attributes
        )
    if args.json:
        print_json({"conversation_id": args.conversation, "position": position})
    else:
        print(f"metadata set at {position}")
    return 0


def handle_delete(args: argparse.Namespace) -> int:
    from goaicore.store.history_operations import HistoryOperations

    with HistoryOperations() as ops:
        position = ops.delete(args.conversation, args.reason)
    if args.json:
        print_json({"conversation_id": args.conversation, "deleted": position})
    else:
        print(f"deleted {args.conversation} at {position}")
    return 0


def handle_erase(args: argparse.Namespace) -> int:
    from goaicore.store.history_operations import HistoryOperations

    if args.conversation is None and args.idle_days is None:
        raise InvalidInputError(
            "erase needs what to erase: a conversation (CONV), or --idle-days DAYS for "
            "every conversation idle that long"
        )
    if args.conversation is not None and args.idle_days is not None:
        raise InvalidInputError("name one conversation (CONV) or --idle-days DAYS, not both")
    if args.yes and args.idle_days is None:
        raise InvalidInputError("--yes goes with --idle-days")
    if args.idle_days is not None:
        return _erase_idle(args)
    with HistoryOperations() as ops:
        erased = ops.erase(args.conversation, args.reason, timeout=args.timeout)
    if args.json:
        print_json({"conversation_id": args.conversation, **jsonable(erased)})
    elif erased.already_erased:
        print(
            f"{args.conversation} was already erased, with no event since: nothing was left "
            f"to erase (this erasure is recorded at {erased.position})"
        )
    elif erased.key_destroyed:
        print(f"erased {args.conversation} at {erased.position}: its data key is destroyed")
    else:
        print(
            f"erased {args.conversation} at {erased.position}: its history left the snapshot; "
            "its content was never sealed (no data key), so the log still holds it in the clear"
        )
    if erased.forks and not args.json:
        print(
            f"its forks keep their own copy of its history: {', '.join(erased.forks)} "
            "(erase them too where that copy must go)"
        )
    return 0


def _erase_idle(args: argparse.Namespace) -> int:
    """List the idle conversations; erase them, one by one with progress, given --yes."""
    from goaicore.progress import ProgressBar
    from goaicore.store.history_operations import HistoryOperations

    reason = args.reason or f"idle for more than {args.idle_days:g} days"
    with HistoryOperations() as ops:
        idle = ops.idle(args.idle_days)
        if not args.yes:
            if args.json:
                print_json({"idle": idle, "erased": []})
            else:
                for conversation_id in idle:
                    print(conversation_id)
                print(
                    f"{len(idle)} conversations idle for more than {args.idle_days:g} days; "
                    "nothing erased (add --yes to erase them)"
                )
            return 0
        erased = []
        bar = ProgressBar(sys.stderr.isatty(), len(idle), "erasing")
        try:
            for conversation_id in idle:
                ops.erase(conversation_id, reason, timeout=args.timeout, name_forks=False)
                erased.append(conversation_id)
                bar.advance()
        finally:
            bar.close()
    if args.json:
        print_json({"idle": idle, "erased": erased})
    else:
        print(f"erased {len(erased)} conversations idle for more than {args.idle_days:g} days")
    return 0
