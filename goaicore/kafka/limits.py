"""One record limit that every writer and every topic agrees on.

``GOAICORE_MAX_RECORD_BYTES`` bounds the encoded value of any record goaicore
writes; clients refuse a larger one before sending it. Around the value a
record carries its key, headers and the batch framing, so producers may send
requests of up to the limit plus :data:`RECORD_HEADROOM`, and every topic
goaicore creates accepts batches of exactly that size (``max.message.bytes``).
A record that passes the client's check therefore always fits the producer
and the topic; one that does not is refused with a clear error, never sent.
"""

from __future__ import annotations

from goaicore.settings import Settings

# Room for the key (a conversation id), headers (dead-letter reasons, trace
# context) and the record batch's own framing around one value at the limit.
RECORD_HEADROOM = 64 * 1024


def max_batch_bytes(settings: Settings) -> int:
    """The producers' max request size and the topics' ``max.message.bytes``."""
    return settings.max_record_bytes + RECORD_HEADROOM
