"""How one worker tells another that a request was forwarded by a worker, not sent by a client.

A worker that does not own a conversation forwards the request to the owner with
:data:`FORWARDED` set, and the owner serves it where it lands, never forwarding it
again (during a rebalance two workers may disagree on the owner). A client could set
that header too, and a non-owner would then serve a request it cannot answer, so the
header carries a signature: an HMAC of the time, the method and the path under the
workers' shared secret (``GOAICORE_WORKER_SECRET``, else derived from every bearer
token together). A header without a valid, recent signature is ignored: the request is
handled as any other.
"""

from __future__ import annotations

import hashlib
import hmac
import time

from goaicore.settings import Settings

FORWARDED = "X-Goaicore-Forwarded"
MAX_SKEW_SECONDS = 300
"""How old (or how far ahead of this worker's clock) a signature may be."""
_LABEL = b"goaicore worker forward v1"


class ForwardSigner:
    """Signs the requests this worker forwards and checks the ones it is sent; the
    secret is never shown (the repr says nothing of it)."""

    def __init__(self, settings: Settings) -> None:
        shared = settings.worker_secret or "\n".join(sorted(settings.http_tokens))
        self._key = hmac.new(shared.encode(), _LABEL, hashlib.sha256).digest()

    def __repr__(self) -> str:
        return "ForwardSigner()"

    def sign(self, method: str, path: str, now: float | None = None) -> str:
        """The :data:`FORWARDED` value for ``method path`` sent now."""
        stamp = int(time.time() if now is None else now)
        return f"{stamp}.{self._tag(stamp, method, path)}"

    def verifies(self, value: str | None, method: str, path: str, now: float | None = None) -> bool:
        """True when ``value`` is a recent signature of ``method path`` by a worker."""
        stamp, _, tag = (value or "").partition(".")
        if not (stamp.isascii() and stamp.isdigit() and len(stamp) <= 12 and tag.isascii()):
            return False
        moment = time.time() if now is None else now
        if abs(moment - int(stamp)) > MAX_SKEW_SECONDS:
            return False
        return hmac.compare_digest(tag, self._tag(int(stamp), method, path))

    def _tag(self, stamp: int, method: str, path: str) -> str:
        message = f"{stamp}\n{method.upper()}\n{path}".encode(errors="surrogatepass")
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()
