"""Faust codecs: snapshots and data keys travel as Avro records, as any consumer reads them;
a conversation's recent replies as JSON."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from faust.serializers import codecs

from goaicore.records.avro.api import decode_key, decode_snapshot, encode_key, encode_snapshot
from goaicore.store.idempotency import RecentReplies

SNAPSHOT_CODEC = "goaicore.snapshot"
KEY_CODEC = "goaicore.conversation-key"
REPLIES_CODEC = "goaicore.recent-replies"


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


class RecentRepliesCodec(codecs.Codec):
    """RecentReplies <-> JSON with base64 Avro replies (readable with any JSON tool)."""

    def _dumps(self, obj: Any) -> bytes:
        if not isinstance(obj, RecentReplies):
            raise TypeError(f"the replies table holds RecentReplies, not {type(obj).__name__}")
        entries = [[rid, base64.b64encode(p).decode()] for rid, p in obj.entries]
        return json.dumps({"v": 1, "replies": entries}).encode()

    def _loads(self, s: bytes) -> Any:
        data = json.loads(s)
        return RecentReplies(tuple((rid, base64.b64decode(p)) for rid, p in data["replies"]))


CODEC = SnapshotCodec()


def register() -> None:
    """Make the codecs known to Faust by name (idempotent)."""
    codecs.register(SNAPSHOT_CODEC, CODEC)
    codecs.register(KEY_CODEC, KeyCodec())
    codecs.register(REPLIES_CODEC, RecentRepliesCodec())
