"""Who may use goaicore's HTTP services: bearer tokens, and where a server may listen.

The store worker's API and the auditor's console accept the same tokens
(``GOAICORE_HTTP_TOKENS``, ``GOAICORE_HTTP_TOKENS_FILE``). A presented token is
compared with each in constant time, so an answer's timing does not tell how much
of a guess was right. Without tokens a service listens on loopback only, unless
its operator says ``--insecure-http``.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Iterable

from goaicore.errors import ConfigError
from goaicore.settings import Settings

log = logging.getLogger(__name__)


class BearerTokens:
    """The accepted tokens; never shown (the repr tells only how many there are)."""

    def __init__(self, tokens: Iterable[str]) -> None:
        self._tokens = tuple(token.encode() for token in tokens)

    def __repr__(self) -> str:
        return f"BearerTokens({len(self._tokens)} tokens)"

    def __bool__(self) -> bool:
        return bool(self._tokens)

    def accepts(self, authorization: str | None) -> bool:
        """True when ``authorization`` is ``Bearer <a configured token>``."""
        scheme, _, credential = (authorization or "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        return self.accepts_token(credential)

    def accepts_token(self, token: str) -> bool:
        """True when ``token`` is one of the configured tokens."""
        given = _utf8(token.strip())
        if not given:
            return False
        matched = False
        for known in self._tokens:  # every token compared: no early exit to time
            matched |= hmac.compare_digest(given, known)
        return matched

    def tag(self, token: str, purpose: bytes) -> str | None:
        """An HMAC of ``purpose`` under ``token`` when it is accepted (else None): a value
        a browser may keep in a cookie that proves the token without holding it."""
        if not self.accepts_token(token):
            return None
        return hmac.new(token.strip().encode(), purpose, "sha256").hexdigest()

    def accepts_tag(self, tag: str, purpose: bytes) -> bool:
        """True when ``tag`` is :meth:`tag` of ``purpose`` under one of the tokens."""
        given = _utf8(tag)
        if given is None:
            return False
        matched = False
        for known in self._tokens:
            expected = hmac.new(known, purpose, "sha256").hexdigest().encode()
            matched |= hmac.compare_digest(given, expected)
        return matched


def _utf8(text: str) -> bytes | None:
    """``text`` as UTF-8, or None when it cannot be: a header or cookie byte that is not
    UTF-8 reaches aiohttp's str as a lone surrogate, and is no token of ours."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return None


def check_http_exposure(
    settings: Settings,
    host: str,
    insecure_http: bool,
    what: str = "the HTTP API",
    option: str = "--web-host",
) -> None:
    """Refuse to serve ``what`` without tokens beyond this machine, unless told to."""
    if settings.http_tokens:
        return
    if is_loopback(host):
        log.warning(
            "%s is unauthenticated (GOAICORE_HTTP_TOKENS is unset); it listens on %s only",
            what,
            host,
        )
        return
    if not insecure_http:
        raise ConfigError(
            f"GOAICORE_HTTP_TOKENS is not set and {option} {host} is reachable from other "
            f"machines: set tokens, or pass --insecure-http to serve {what} unauthenticated"
        )
    log.warning("%s is unauthenticated on %s (--insecure-http)", what, host)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
