"""GOAICORE_TABLE_STORE=rocksdb: the snapshots table on disk, kept across restarts.

The worker keeps each changelog partition's table in a RocksDB database under its
data folder; after a restart (even a kill -9) it recovers from there and the
changelog's tail, and folds on from exactly where it was. Two workers never share a
folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from goaicore.clients import EventPublisher, HistoryReader
from goaicore.config import Settings
from goaicore.errors import ConfigError
from goaicore.kafka import ensure_topics
from goaicore.kafka.faust.disk_table import lock_table_dir
from goaicore.replay.verify import verify_snapshot
from tests.cli import run_goaicore
from tests.store.workers import StoreWorker, publish_ticks, wait_folded, worker_env


def _databases(data_dir: Path) -> list[Path]:
    return sorted(p for p in (data_dir / "store").rglob("snapshots-*.db") if p.is_dir())


@pytest.mark.parametrize("flush_ms", [100, 0, 5000])
def test_a_worker_with_its_table_on_disk_folds_on_after_a_kill(
    settings: Settings, flush_ms: int
) -> None:
    """At each extreme of GOAICORE_SNAPSHOT_FLUSH_MS too: a snapshot held back is on
    disk only once its record is sent, so a kill never leaves the disk ahead."""
    on_disk = settings.with_overrides(table_store="rocksdb", snapshot_flush_ms=flush_ms)
    ensure_topics(on_disk)
    first = StoreWorker(on_disk, "first").start()
    last = publish_ticks(on_disk, "d")
    wait_folded(on_disk, last, workers=(first,))
    first.kill9()
    assert _databases(on_disk.data_dir), "no RocksDB database under the data folder"

    second = StoreWorker(on_disk, "second").start()
    try:
        with EventPublisher(on_disk) as publisher:
            more = {c: publisher.game_event(c, "after the kill", kind="tick").offset for c in last}
        stored = wait_folded(on_disk, more, workers=(second,))
    finally:
        assert second.stop() == 0, second.log()
    assert {s.event_count for s in stored.values()} == {11}  # 10 before + 1 after
    assert all(s.messages[-1].text == "after the kill" for s in stored.values())
    with HistoryReader(on_disk) as history:
        assert all(verify_snapshot(history, s) == [] for s in stored.values())


def test_two_workers_never_share_a_table_folder(settings: Settings, tmp_path: Path) -> None:
    held = lock_table_dir(tmp_path / "store")
    try:
        with pytest.raises(ConfigError, match="each worker needs a GOAICORE_DATA_DIR of its own"):
            lock_table_dir(tmp_path / "store")
        on_disk = settings.with_overrides(table_store="rocksdb", data_dir=tmp_path)
        result = run_goaicore("worker", env=worker_env(on_disk))
        assert result.returncode != 0
        assert "is in use by worker pid" in result.stderr
        assert "Traceback" not in result.stderr
    finally:
        held.close()
    lock_table_dir(tmp_path / "store").close()  # free again once the holder is gone
