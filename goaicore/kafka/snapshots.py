"""What the snapshots topic holds: the latest value of each key, decoded.

The topic is compacted, so it holds at least the latest value per key (and, until
compaction runs, older ones too): the last record of a key wins, a tombstone means
the conversation has no snapshot.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from goaicore.records import ConversationSnapshot
from goaicore.records.avro.api import decode_snapshot
from goaicore.records.avro.errors import DecodeError

log = logging.getLogger(__name__)


def decode_latest(
    latest: Mapping[bytes, bytes | None],
) -> tuple[dict[str, ConversationSnapshot], int]:
    """The snapshots held by each key's latest value (a tombstone: none), by conversation
    id, and how many did not decode (each logged and left out)."""
    out: dict[str, ConversationSnapshot] = {}
    skipped = 0
    for key, value in latest.items():
        if value is None:
            continue  # a tombstone: no snapshot
        try:
            out[key.decode()] = decode_snapshot(value)
        except (DecodeError, UnicodeDecodeError) as err:
            skipped += 1
            log.warning("skipped an undecodable snapshot for key %r: %s", key, err)
    return out, skipped
