"""The conversation store: the rules every way into it shares.

A turn's events and their failure kinds (``turns``, with the request checks in
``requests``), idempotency by request id (``idempotency``), read-your-writes
(``read_your_writes``), one conversation's requests in arrival order (``ordering``)
and what fits under the record limit (``limits``) live here once; the store worker,
the clients and the in-memory store apply them.
"""
