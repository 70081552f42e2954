"""The console's pages and the error page every failure becomes.

A bad parameter is a 400 page that says which; a projection not there yet or a
database that does not answer, a 503 that says what to start; anything else, a 500
that tells nothing of the exception (the console's log has it).
"""

from __future__ import annotations

import logging

from aiohttp import web

from goaicore.errors import DatabaseError, InputError
from goaicore_console.auth import Handler
from goaicore_console.pages import audit, conversations, session
from goaicore_console.pages.params import NothingHereError
from goaicore_console.rendering import render

log = logging.getLogger(__name__)


def register(router: web.UrlDispatcher) -> None:
    router.add_get("/", conversations.home)
    router.add_get("/conversations", conversations.conversation_list)
    router.add_get("/conversations/{conversation_id}", conversations.conversation)
    router.add_get("/conversations/{conversation_id}/as-of", conversations.as_of_page)
    router.add_get("/verify", audit.verify_page)
    router.add_post("/verify/all", audit.verify_all)
    router.add_get("/dead-letters", audit.dead_letters_page)
    router.add_get("/usage", audit.usage_page)
    router.add_get("/login", session.login_page)
    router.add_post("/login", session.login)
    router.add_post("/logout", session.logout)
    router.add_get("/health", session.health)


@web.middleware
async def error_pages(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException as err:
        if err.status in (404, 405) and err.content_type != "text/html":
            page = _error(request, err.status, err.reason)
            if "Allow" in err.headers:
                page.headers["Allow"] = err.headers["Allow"]
            return page
        raise
    except NothingHereError as err:
        return _error(request, 404, str(err))
    except InputError as err:
        return _error(request, 400, str(err))
    except DatabaseError as err:
        return _error(request, 503, str(err))
    except Exception:
        log.exception("console page %s failed", request.path)
        return _error(request, 500, "the page failed; the console's log has the details")


def _error(request: web.Request, status: int, message: str) -> web.Response:
    return render(request, "error.html", status=status, status_code=status, message=message)
