"""``goaicore dev``: run the whole local stack until Ctrl-C or SIGTERM.

A signal stops it at any moment, its start included: the handler only asks
(``goaicore.stopping``), and the stack stops at its next step or wait, stopping what it
started. While it runs, a process of the
stack that stops is started again (``LocalStack.watch``) and the stack gives up,
exiting 1, on one that keeps stopping.
"""

from __future__ import annotations

import argparse
import signal
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from goaicore.settings import Settings, mask_password
from goaicore.stopping import Stopping, StopRequested

if TYPE_CHECKING:
    from goaicore.devstack.stack import LocalStack, StackInfo


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "dev",
        help="start the local stack (broker, PostgreSQL, topics) and keep it running",
        description="Start the local stack on embedded defaults, show it working, then "
        "write <data dir>/dev.json (mode 0600), start again any of its processes that stops "
        "(exit 1 on one that stops 3 times in 60 s), and stop everything it started on "
        "Ctrl-C or SIGTERM, at any moment. GOAICORE_LOCAL_BROKER=kafka runs Apache Kafka "
        "instead of the embedded broker, its data kept in <data dir>/kafka.",
    )
    parser.add_argument(
        "--check-only",
        action="store_true",
        help="start, run the round-trip check, then stop (no waiting)",
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from goaicore.devstack.stack import LocalStack

    console = Console()
    # SIGINT or SIGTERM only asks: the stack stops at its next step or wait, its start
    # included (a handler that raised could land inside a lock or a finalizer).
    stopping = Stopping()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, frame: stopping.request())
    stack = LocalStack(Settings(), stopping=stopping)
    starting = "starting the local stack ..."
    if stack.settings.bootstrap_servers is None and stack.settings.local_broker == "kafka":
        starting = "starting the local stack (Apache Kafka takes a few seconds) ..."
    try:
        with console.status(starting):
            info = stack.start()  # stops what it started on any exception
    except StopRequested:
        console.print("stopped while starting; stopped everything the dev stack started")
        return 0
    try:
        _run(args, console, stack, info)
    except StopRequested:
        pass
    finally:
        with console.status("stopping ..."):
            stack.stop()
        console.print("stopped everything the dev stack started")
    return 0


def _run(args: argparse.Namespace, console: Console, stack: LocalStack, info: StackInfo) -> None:
    """Show the started stack, prove it, publish dev.json, then watch it until stopped."""
    table = Table(title="goaicore dev stack", show_header=False)
    table.add_row("Kafka", f"{info.bootstrap_servers} — {info.broker}")
    table.add_row("PostgreSQL", f"{mask_password(info.database_url)} ({info.database_source})")
    topics = ", ".join(f"{t.name} ({t.action})" for t in stack.topics)
    table.add_row("topics", f"{topics} — {info.partitions} partitions each")
    table.add_row(
        "store worker",
        f"pid {info.worker_pid}, log {stack.settings.data_dir / 'worker.log'}, "
        f"metrics {info.http_url}/metrics",
    )
    table.add_row(
        "projector",
        f"pid {info.projector_pid}, schema {stack.settings.db_schema}, "
        f"log {stack.settings.data_dir / 'projector.log'}, "
        f"metrics {info.projector_url}/metrics",
    )
    signing_in = (
        "sign in with a GOAICORE_HTTP_TOKENS token"
        if stack.settings.http_tokens
        else "[yellow]unauthenticated[/yellow], 127.0.0.1 only"
    )
    table.add_row(
        "console",
        f"{info.console_url} — {signing_in}; pid {info.console_pid}, "
        f"log {stack.settings.data_dir / 'console.log'}",
    )
    table.add_row("dev.json", f"{stack.dev_file} (written once the checks below pass)")
    console.print(table)
    choice = stack.schema_choice
    note = choice.note(stack.broker, info.topic_prefix) if choice and stack.broker else None
    if note is not None:
        console.print(f"[yellow]![/yellow] {escape(note)}")

    check = stack.check()
    console.print(
        f"[green]✓[/green] record through the broker: {check.topic} "
        f"partition {check.partition} offset {check.offset} ({check.record_ms:.1f} ms)"
    )
    console.print(
        f"[green]✓[/green] row through PostgreSQL: {check.table} id {check.row_id} "
        f"({check.row_ms:.1f} ms)"
    )
    with console.status("waiting for the store worker to fold a first event ..."):
        folded = stack.check_fold()
    console.print(
        f"[green]✓[/green] event folded by the store worker: {folded.conversation_id} "
        f"offset {folded.offset} → snapshot with {folded.messages} messages "
        f"({folded.seconds:.1f} s)"
    )
    with console.status("waiting for the projector to write it to PostgreSQL ..."):
        projected = stack.check_projection(folded)
    console.print(
        f"[green]✓[/green] event projected to PostgreSQL: {projected.table} "
        f"offset {projected.offset} ({projected.seconds:.1f} s)"
    )
    with console.status("waiting for the console to show it ..."):
        shown = stack.check_console(folded)
    console.print(f"[green]✓[/green] conversation shown by the console: {shown.url}")
    console.print(f"[green]✓[/green] ready: wrote {stack.publish()}")
    console.print(escape(connect_lines(stack, info)), soft_wrap=True)
    _show_chat_session(console, stack)
    if args.check_only:
        return
    console.print("[bold]running[/bold] — Ctrl-C to stop")
    errors = Console(stderr=True)
    while True:
        stack.stopping.pause(0.5)
        for line in stack.watch():
            errors.print(f"goaicore dev: {escape(line)}", soft_wrap=True)


def connect_lines(stack: LocalStack, info: StackInfo) -> str:
    """How another shell finds this stack: its data dir, or every variable it needs.

    Either way it is the same stack, with the same master keys: a command whose exported
    broker is the one in dev.json takes the stack's keys from the data dir. Secrets are
    named, never printed: the master keys as the file they are read from.
    """
    data_dir = stack.settings.data_dir.resolve()
    lines = [
        "Connect with (goaicore commands in this folder, or any folder inside it, find the "
        "stack in dev.json by themselves; elsewhere):",
        f"  export GOAICORE_DATA_DIR={data_dir}",
        "or, without dev.json, with every variable it holds:",
        f"  export KAFKA_BOOTSTRAP_SERVERS={info.bootstrap_servers}",
        f"  export GOAICORE_BROKER_PROFILE={info.broker_profile}",
        f"  export DATABASE_URL={mask_password(info.database_url)}",
        f"  export GOAICORE_DB_SCHEMA={info.db_schema}",
    ]
    if stack.master_keys_file is not None:
        lines.append(f'  export GOAICORE_MASTER_KEYS="$(cat {stack.master_keys_file.resolve()})"')
    return "\n".join(lines)


def _show_chat_session(console: Console, stack: LocalStack) -> None:
    """Play the scripted game session through the worker's HTTP API and show it."""
    from goaicore.conversation.providers.choice import Providers

    info = stack.started()
    label = Providers(stack.settings).label
    console.print(f"[bold]chat[/bold] — HTTP {info.http_url}, model: {label}")
    tokens = stack.settings.http_tokens
    if tokens:
        console.print(f"  HTTP API: bearer tokens required ({len(tokens)} configured)")
    else:
        console.print(
            "  HTTP API: [yellow]unauthenticated[/yellow] (GOAICORE_HTTP_TOKENS is unset); "
            "it listens on 127.0.0.1 only"
        )
    with console.status("playing a short game session ..."):
        steps = stack.chat_session()
    for step in steps:
        if step.kind == "event":
            console.print(f"  [cyan]event[/cyan]  {escape(step.text)}")
        elif step.kind == "ask":
            console.print(f"  [yellow]player[/yellow] {escape(step.text)}")
        else:
            note = f"; {step.note}" if step.note else ""
            console.print(
                f"  [green]reply[/green]  {escape(step.text)}  ({step.seconds:.2f} s{note})"
            )
    console.print(
        f"  try: curl -s -X POST {info.http_url}/v1/conversations/demo-player/messages "
        + ('-H "Authorization: Bearer $TOKEN" ' if tokens else "")
        + "-H 'Content-Type: application/json' -d '{\"text\": \"What is the score_lookup "
        "for York?\"}'"
    )
