"""The chat agent and what it runs on: one LLM turn per request, in order per conversation.

``agent`` consumes ``requests``; ``turns`` runs a turn on the snapshot; ``idempotency``
answers a request id twice with one reply; ``watermarks`` waits for read-your-writes;
``dispatch`` orders requests per conversation; ``replies`` hands replies to HTTP
waiters; ``output_limits`` keeps every record under the limit; ``tools`` and
``game_tools`` are the tools a turn may call.
"""
