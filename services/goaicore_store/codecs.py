"""Faust codecs: snapshots and data keys travel as Avro records, as any consumer reads them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from faust.serializers import codecs

from goaicore.records.avro.api import decode_key, decode_snapshot, encode_key, encode_snapshot

SNAPSHOT_CODEC = "goaicore.snapshot"
KEY_CODEC = "goaicore.conversation-key"


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


class KeyCodec(codecs.Codec):
    """ConversationKey <-> single-object Avro bytes: the keys table's changelog values."""

    def _dumps(self, obj: Any) -> bytes:
        return encode_key(obj)

    def _loads(self, s: bytes) -> Any:
        return decode_key(s)


CODEC = SnapshotCodec()


def register() -> None:
    """Make the codecs known to Faust by name (idempotent)."""
    codecs.register(SNAPSHOT_CODEC, CODEC)
    codecs.register(KEY_CODEC, KeyCodec())
