"""The console's aiohttp application: its pages, its sign-in, its connections."""

from __future__ import annotations

from aiohttp import web

from goaicore.http_auth import BearerTokens
from goaicore.settings import Settings
from goaicore_console import pages
from goaicore_console.auth import TOKENS_KEY, console_auth, same_site_only
from goaicore_console.database import Database
from goaicore_console.keys import DATABASE_KEY, JOBS_KEY, SETTINGS_KEY
from goaicore_console.rendering import ENVIRONMENT_KEY, STATIC, environment, security_headers
from goaicore_console.verify_job import VerifyJobs

MAX_BODY_BYTES = 64 * 1024  # the console takes only small forms


def create_console(settings: Settings, database: Database | None = None) -> web.Application:
    app = web.Application(
        middlewares=[security_headers, pages.error_pages, same_site_only(), console_auth()],
        client_max_size=MAX_BODY_BYTES,
    )
    database = database or Database(settings)
    app[SETTINGS_KEY] = settings
    app[TOKENS_KEY] = BearerTokens(settings.http_tokens)
    app[DATABASE_KEY] = database
    app[JOBS_KEY] = VerifyJobs(database, settings.topic("events"))
    app[ENVIRONMENT_KEY] = environment()
    pages.register(app.router)
    app.router.add_static("/static/", STATIC, name="static")

    async def close(app: web.Application) -> None:
        await app[JOBS_KEY].close()
        app[DATABASE_KEY].close()

    app.on_cleanup.append(close)
    return app
