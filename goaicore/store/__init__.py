"""The conversation store: one port behind every interface, its rules once, three stores.

- ``port``: :class:`~goaicore.store.port.ConversationStore`, every use case a caller
  has (read, append, ask, the history operations, list), and what they return;
- ``application``: those use cases once, over a ``backend`` (what a store needs of
  where its log lives);
- the rules: a turn's events and failure kinds (``turns``, with the request checks in
  ``requests``), idempotency by request id (``idempotency``), read-your-writes
  (``read_your_writes``), one conversation's requests in arrival order (``ordering``),
  what fits under the record limit (``limits``, and the inputs' checks in ``inputs``),
  what each history operation appends and refuses (``history``), and the errors
  (``errors``);
- the stores: in memory (``memory``), over Kafka (``kafka``), and inside the store
  worker (``goaicore_store.port``); ``sync_store`` and ``history_operations`` serve
  synchronous code.
"""
