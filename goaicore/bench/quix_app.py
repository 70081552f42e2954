"""The peers suite's Quix Streams app: goaicore's fold, in Quix Streams' stateful dataframe.

Run as its own process (``python -m goaicore.bench.quix_app``, its settings from the
environment like the store worker's), so its CPU is measured alone. Each event is decoded
with goaicore's codec, folded with :func:`goaicore.fold.fold` at its partition and
offset onto the conversation's snapshot, and the snapshot encoded with goaicore's encoder
is kept in the key's state (Quix's RocksDB store, with its changelog topic) and written to
the output topic: the work of the store worker's fold, in another framework. Snapshots
are also held decoded in memory, as the store worker's table holds them, so each event
does not decode its conversation's snapshot again. At-least-once, Quix's default.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from goaicore.extras import needs
from goaicore.fold import fold
from goaicore.records import ConversationSnapshot, LogPosition
from goaicore.records.avro.api import DecodeError, decode_event, decode_snapshot, encode_snapshot
from goaicore.settings import Settings

if TYPE_CHECKING:
    from quixstreams import State

GUARANTEE = "at-least-once (Quix's default)"


def _dumps(json_dumps: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    """Values are the snapshots' Avro bytes already, stored as they are; keys (also
    serialized with it) are JSON, as Quix's default (``json_dumps``) makes them."""

    def dumps(value: Any) -> bytes:
        return value if isinstance(value, bytes) else json_dumps(value)

    return dumps


def _loads(value: bytes) -> bytes:
    """The stored value is the snapshot's Avro bytes."""
    return value


class Folder:
    """Folds each conversation's events onto its snapshot, kept in Quix's state."""

    def __init__(self) -> None:
        from quixstreams.context import message_context

        self.decoded: dict[str, ConversationSnapshot] = {}
        self.context = message_context

    def __call__(
        self, value: bytes, key: str, timestamp: int, headers: Any, state: State[str, bytes]
    ) -> Any:
        try:
            event = decode_event(value)
        except DecodeError as err:
            print(f"skipped an undecodable event: {err}", flush=True)
            return None
        context = self.context()
        snapshot = self.decoded.get(key)
        if snapshot is None:
            stored = state.get("snapshot")
            snapshot = decode_snapshot(stored) if stored is not None else None
        snapshot = fold(
            snapshot, event, LogPosition(partition=context.partition, offset=context.offset)
        )
        self.decoded[key] = snapshot
        encoded = encode_snapshot(snapshot)
        state.set("snapshot", encoded)
        return encoded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="snapshots", help="the output topic's short name")
    args = parser.parse_args()
    with needs("peers"):
        from quixstreams import Application
        from quixstreams.state.rocksdb import RocksDBOptions
        from quixstreams.utils.json import dumps as json_dumps
    settings = Settings()
    app = Application(
        broker_address=settings.bootstrap_servers,
        consumer_group=f"{settings.topic_prefix}.bench-quix",
        auto_offset_reset="earliest",
        processing_guarantee="at-least-once",
        state_dir=settings.data_dir / "quix-state",
        rocksdb_options=RocksDBOptions(dumps=_dumps(json_dumps), loads=_loads),
        loglevel="WARNING",
    )
    events = app.topic(settings.topic("events"), key_deserializer="str", value_deserializer="bytes")
    output = app.topic(settings.topic(args.output), key_serializer="str", value_serializer="bytes")
    frame = app.dataframe(events)
    frame = frame.apply(Folder(), stateful=True, metadata=True)
    frame = frame.filter(lambda value: value is not None)
    frame.to_topic(output)
    app.run()


if __name__ == "__main__":
    main()
