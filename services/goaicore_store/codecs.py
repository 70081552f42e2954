"""Faust codecs: snapshots travel as Avro ConversationSnapshot records."""

from __future__ import annotations

from typing import Any

from faust.serializers import codecs

from goaicore.records.avro.api import decode_snapshot, encode_snapshot

SNAPSHOT_CODEC = "goaicore.snapshot"


class SnapshotCodec(codecs.Codec):
    """ConversationSnapshot <-> single-object Avro bytes, as any consumer reads them."""

    def _dumps(self, obj: Any) -> bytes:
        return encode_snapshot(obj)

    def _loads(self, s: bytes) -> Any:
        return decode_snapshot(s)


def register() -> None:
    """Make the codec known to Faust by name (idempotent)."""
    codecs.register(SNAPSHOT_CODEC, SnapshotCodec())
