"""``goaicore console``: serve the auditor's console until SIGINT or SIGTERM."""

from __future__ import annotations

import logging

from aiohttp import web

from goaicore import logs
from goaicore.http_auth import check_http_exposure
from goaicore.projection.db import connect, require_projection
from goaicore.settings import Settings

log = logging.getLogger(__name__)

DEFAULT_PORT = 8470


def main(
    port: int = DEFAULT_PORT,
    host: str = "127.0.0.1",
    insecure_http: bool = False,
    schema: str | None = None,
) -> int:
    """Serve the console for the configured topic prefix and schema (``schema``: another
    one, such as a schema the dev stack left an earlier log's rows in); the exit code."""
    from goaicore_console.app import create_console

    settings = Settings()
    if schema is not None:
        settings = settings.with_overrides(db_schema=schema)
    logs.configure(logging.INFO, settings.log_format)
    check_http_exposure(settings, host, insecure_http, what="the console", option="--host")
    with connect(settings) as conn:  # a database that does not answer: one line, exit 4
        try:
            require_projection(conn, settings.db_schema)
        except LookupError as err:
            log.warning("%s; the console shows it once the projector has run", err)
    app = create_console(settings)
    log.info("goaicore console on http://%s:%d", host, port)
    web.run_app(app, host=host, port=port, print=None, access_log=None, handle_signals=True)
    return 0
