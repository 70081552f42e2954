"""The HTTP API's settings: the bearer tokens it accepts, from a variable and a file, and
the secret workers prove a forwarded request with."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from goaicore.errors import ConfigError
from goaicore.settings.declare import Setting, read_env

HTTP_TOKENS = Setting(
    "http_tokens",
    "GOAICORE_HTTP_TOKENS",
    "unset: no authentication",
    "Bearer tokens the worker's HTTP API accepts, comma-separated; never shown or logged. "
    "Each is at least 16 printable characters with no spaces (`python -c 'import secrets; "
    "print(secrets.token_urlsafe(32))'` makes one); anything else is a configuration error "
    "(exit 3). `/health` and `/ready` stay open. Unset, a worker binds loopback only unless "
    "started with `--insecure-http`.",
    secret=True,
)
HTTP_TOKENS_FILE = Setting(
    None,  # read into http_tokens, which a child process is given itself
    "GOAICORE_HTTP_TOKENS_FILE",
    "unset",
    "A file of more bearer tokens, one per line (or comma-separated): a mounted secret.",
)
WORKER_SECRET = Setting(
    "worker_secret",
    "GOAICORE_WORKER_SECRET",
    "unset: derived from all of GOAICORE_HTTP_TOKENS together",
    "The secret the workers of a deployment share to sign a request one forwards to "
    "another (the owner of its conversation); a forwarding header without a valid "
    "signature is ignored. Never shown or logged. Set it, the same on every worker, "
    "where a client may hold every bearer token (a deployment of one token).",
    lambda name, raw: raw.strip() or None,
    secret=True,
)
HTTP: tuple[Setting, ...] = (HTTP_TOKENS, HTTP_TOKENS_FILE, WORKER_SECRET)


def read_http_tokens(env: Mapping[str, str]) -> tuple[str, ...]:
    """The tokens of GOAICORE_HTTP_TOKENS and of the file GOAICORE_HTTP_TOKENS_FILE names.

    A token is never part of an error message: only the variable and the file are named.
    """
    raw = env.get(HTTP_TOKENS.variable) or ""
    path = read_env(env, HTTP_TOKENS_FILE.variable)
    if path is not None:
        try:
            raw += "," + Path(path).expanduser().read_text()
        except (OSError, UnicodeDecodeError) as err:
            reason = getattr(err, "strerror", None) or type(err).__name__
            raise ConfigError(
                f"GOAICORE_HTTP_TOKENS_FILE={path!r}: cannot read it ({reason})"
            ) from None
    tokens = [t.strip() for t in raw.replace("\n", ",").split(",")]
    unique = dict.fromkeys(t for t in tokens if t)
    for token in unique:
        if len(token) < 16 or any(c.isspace() or not c.isprintable() for c in token):
            raise ConfigError(
                "GOAICORE_HTTP_TOKENS (or its file) holds a token shorter than 16 characters "
                "or with spaces or control characters in it; use long random tokens"
            )
    return tuple(unique)
