"""The chat agent: one LLM turn per request, in order per conversation, on the worker's table.

``agent`` consumes ``requests`` and runs each turn by the store's rules
(:mod:`goaicore.store`: the turn, idempotency, read-your-writes, ordering, output
limits), streams a turn's progress to ``reply-stream`` and to the callers following
it here (:mod:`goaicore.store.reply_streams`); ``tools`` and ``game_tools`` are the
tools a turn may call.
"""
