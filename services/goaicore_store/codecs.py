"""Faust codecs: snapshots travel as Avro ConversationSnapshot records."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from faust.serializers import codecs

from goaicore.records.avro.api import decode_snapshot, encode_snapshot

SNAPSHOT_CODEC = "goaicore.snapshot"


class SnapshotCodec(codecs.Codec):
    """ConversationSnapshot <-> single-object Avro bytes, as any consumer reads them.

    ``on_encoded`` (the worker's snapshot-size metric) sees each encoded size.
    """

    on_encoded: Callable[[int], None] | None = None

    def _dumps(self, obj: Any) -> bytes:
        encoded = encode_snapshot(obj)
        if self.on_encoded is not None:
            self.on_encoded(len(encoded))
        return encoded

    def _loads(self, s: bytes) -> Any:
        return decode_snapshot(s)


CODEC = SnapshotCodec()


def register() -> None:
    """Make the codec known to Faust by name (idempotent)."""
    codecs.register(SNAPSHOT_CODEC, CODEC)
