"""The auditor's commands over PostgreSQL (the projector fills it).

``goaicore projection clear``, ``conversations``, ``search`` and ``ledger`` live here;
``history --from-db`` and ``verify --db`` are flags of the log commands and
call into this module.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from goaicore.cli.args import POSITIVE, moment
from goaicore.cli.output import add_json_option, print_json
from goaicore.cli.render import clip, describe_event, print_report
from goaicore.records.event_types import BODY_TYPE_NAMES
from goaicore.records.jsonable import jsonable
from goaicore.settings import Settings

if TYPE_CHECKING:
    from goaicore.projection.queries import ConversationSummary


def register(subparsers: Any) -> None:
    projection: argparse.ArgumentParser = subparsers.add_parser(
        "projection", help="manage a PostgreSQL projection (clear it, only when asked)"
    )
    actions = projection.add_subparsers(dest="action", required=True, metavar="ACTION")
    clear: argparse.ArgumentParser = actions.add_parser(
        "clear",
        help="delete the projection of one topic prefix from one schema",
        description="Delete the rows and positions of topic prefix PREFIX's projection in "
        "PostgreSQL schema SCHEMA, so the projector projects the log again from its start. "
        "Both are required; a schema that holds another prefix's projection is refused and "
        "nothing else is touched. The log itself is never changed.",
    )
    clear.add_argument("--schema", required=True, help="the PostgreSQL schema to clear")
    clear.add_argument("--prefix", required=True, help="the topic prefix it must hold")
    clear.set_defaults(handler=handle_projection_clear)

    listing: argparse.ArgumentParser = subparsers.add_parser(
        "conversations", help="conversations in PostgreSQL with counts and last activity"
    )
    listing.add_argument("--since", type=moment, metavar="TIME", help="active at or after")
    listing.add_argument("--limit", type=POSITIVE, default=None, metavar="N")
    listing.add_argument("--owner", help="owned by exactly this owner")
    listing.add_argument(
        "--tag", action="append", default=[], metavar="TAG", help="has this tag (repeatable)"
    )
    listing.add_argument("--title", metavar="TEXT", help="the title contains TEXT (any case)")
    add_json_option(listing)
    listing.set_defaults(handler=handle_conversations)

    search: argparse.ArgumentParser = subparsers.add_parser(
        "search", help="full-text search over message text in PostgreSQL"
    )
    search.add_argument("text", metavar="TEXT", help='words, "a phrase", or, -word')
    search.add_argument("--conversation", metavar="CONV", help="only this conversation")
    search.add_argument("--limit", type=POSITIVE, default=20, metavar="N")
    add_json_option(search)
    search.set_defaults(handler=handle_search)

    ledger: argparse.ArgumentParser = subparsers.add_parser(
        "ledger", help="tokens and cost per assistant turn (CONV) or per conversation"
    )
    ledger.add_argument("conversation", nargs="?", metavar="CONV")
    ledger.add_argument("--since", type=moment, metavar="TIME", help="turns at or after")
    ledger.add_argument("--until", type=moment, metavar="TIME", help="turns at or before")
    add_json_option(ledger)
    ledger.set_defaults(handler=handle_ledger)


def add_history_options(parser: argparse.ArgumentParser) -> None:
    """``history``'s PostgreSQL flags: where to read, and filters by type and time."""
    parser.add_argument(
        "--from-db", action="store_true", help="read the PostgreSQL projection, not the log"
    )
    parser.add_argument(
        "--type",
        action="append",
        default=[],
        choices=BODY_TYPE_NAMES,
        metavar="TYPE",
        help=f"only this event type (repeatable; with --from-db): {', '.join(BODY_TYPE_NAMES)}",
    )
    parser.add_argument("--since", type=moment, metavar="TIME", help="occurred at or after")
    parser.add_argument("--until", type=moment, metavar="TIME", help="occurred at or before")


def _when(value: datetime | None) -> str:
    return value.astimezone(UTC).isoformat(timespec="seconds") if value else "-"


def handle_projection_clear(args: argparse.Namespace) -> int:
    from goaicore.projection import connect
    from goaicore.projection.clear import clear_projection

    settings = Settings().with_overrides(db_schema=args.schema)
    with connect(settings) as conn:
        cleared = clear_projection(conn, args.schema, args.prefix)
    counts = ", ".join(f"{rows} {table}" for table, rows in cleared.rows.items())
    print(
        f"cleared schema {cleared.schema} (topic prefix {cleared.prefix}): {counts}, "
        f"{cleared.positions} projector positions; the log is unchanged"
    )
    return 0


def history_from_db(args: argparse.Namespace) -> int:
    from goaicore.projection import open_queries

    with open_queries(Settings()) as queries:
        rows = queries.history(args.conversation, args.type, args.since, args.until)
    if args.json:
        events = [{"partition": r.partition, "offset": r.offset, "event": r.event()} for r in rows]
        print_json({"conversation_id": args.conversation, "events": events})
        return 0
    for row in rows:
        print(f"{row.offset:>8} {describe_event(row.event())}")
    print(f"{len(rows)} events")
    return 0


def _labels(row: ConversationSummary) -> str:
    """The metadata a list row shows after its figures: title, owner, tags."""
    parts = [repr(clip(row.title, 40))] if row.title else []
    if row.owner:
        parts.append(f"owner {clip(row.owner, 24)}")
    parts += [f"#{tag}" for tag in row.tags]
    return "  " + " ".join(parts) if parts else ""


def handle_conversations(args: argparse.Namespace) -> int:
    from goaicore.projection import open_queries
    from goaicore.projection.queries import ConversationFilter

    where = ConversationFilter(owner=args.owner, tags=tuple(args.tag), title=args.title)
    with open_queries(Settings()) as queries:
        rows = queries.conversations(args.since, args.limit, where)
    if args.json:
        print_json({"conversations": rows})
        return 0
    print(f"{'conversation':<24} {'events':>7} {'messages':>8} {'tokens':>9}  last activity")
    for row in rows:
        tokens = (row.prompt_tokens or 0) + (row.completion_tokens or 0)
        deleted = "  deleted" if row.deleted else ""
        print(
            f"{clip(row.conversation_id, 24):<24} {row.event_count:>7} {row.message_count:>8}"
            f" {tokens:>9}  {_when(row.last_occurred_at)}{deleted}{_labels(row)}"
        )
    print(f"{len(rows)} conversations")
    return 0


def handle_search(args: argparse.Namespace) -> int:
    from goaicore.projection import open_queries

    with open_queries(Settings()) as queries:
        hits = queries.search(args.text, args.conversation, args.limit)
    if args.json:
        print_json({"matches": hits})
        return 0
    for hit in hits:
        print(
            f"{hit.conversation_id} @{hit.offset} {_when(hit.occurred_at)} {hit.body_type}:"
            f" {clip(hit.snippet, 120)}"
        )
    print(f"{len(hits)} matches")
    return 0


def _dollars(nanos: int) -> str:
    """Exact: the ledger counts nano-dollars."""
    return f"${nanos // 1_000_000_000}.{nanos % 1_000_000_000:09d}"


def handle_ledger(args: argparse.Namespace) -> int:
    from goaicore.projection import open_queries

    with open_queries(Settings()) as queries:
        if args.conversation is None:
            totals = queries.ledger_totals(args.since, until=args.until)
            unpriced = queries.unpriced_models(args.since, args.until)
            if args.json:
                print_json({"conversations": totals, "unpriced": unpriced})
                return 0
            for t in totals:
                unknown = (
                    f" ({t.turns_without_cost} without a cost)" if t.turns_without_cost else ""
                )
                print(
                    f"{clip(t.conversation_id, 24):<24} turns {t.turns:>5}"
                    f" prompt {t.prompt_tokens:>9} completion {t.completion_tokens:>9}"
                    f" cost {_dollars(t.cost_usd_nanos)}{unknown}"
                )
            print(f"{len(totals)} conversations")
            _print_unpriced(unpriced)
            return 0
        book = queries.ledger(args.conversation, args.since, args.until)
    if args.json:
        print_json({**jsonable(book), "unpriced": book.unpriced})
        return 0
    for e in book.entries:
        cost = _dollars(e.cost_usd_nanos) if e.cost_usd_nanos is not None else "unknown"
        print(
            f"{e.offset:>8} {_when(e.occurred_at)} {e.provider}/{e.model}"
            f" prompt {e.prompt_tokens} completion {e.completion_tokens} calls {e.llm_calls}"
            f" cost {cost}"
        )
    t = book.totals
    unknown = f" ({t.turns_without_cost} turns without a cost)" if t.turns_without_cost else ""
    print(
        f"total: {t.turns} turns, prompt {t.prompt_tokens}, completion {t.completion_tokens},"
        f" cost {_dollars(t.cost_usd_nanos)}{unknown}"
    )
    _print_unpriced(book.unpriced)
    return 0


def _print_unpriced(models: list[str]) -> None:
    if models:
        print(f"no price known for: {', '.join(models)} (GOAICORE_PRICES adds prices)")


def verify_from_db(args: argparse.Namespace) -> int:
    from goaicore.progress import ProgressBar
    from goaicore.projection import open_queries

    settings = Settings()
    with open_queries(settings) as queries:
        count = len(args.conversations) or queries.snapshot_count()
        bar = ProgressBar(sys.stderr.isatty(), count, "verifying stored snapshots")
        try:
            report = queries.verify(settings.topic("events"), args.conversations, bar.advance)
        finally:
            bar.close()
    return print_report(report, against_db=True, as_json=args.json)
