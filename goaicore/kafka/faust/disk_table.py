"""Tables kept on disk with RocksDB (rocksdict), found by key without a current event.

faust-streaming's RocksDB store keeps one database per changelog partition and
chooses it from the partition of the event being handled (``current_event()``), or,
for a table with ``use_partitioner``, by asking every open database whether it may
hold the key. Our tables are written from batch lanes, where no event is current,
and are keyed by conversation id with the default partitioner (``partition_for``):
so this store computes a key's partition from the key, as every producer does, and
goes straight to that partition's database.

A worker's databases must be its own: RocksDB locks them, and Faust would retry a
locked one for 30 s and then stop. :func:`lock_table_dir` takes a lock on the folder
at start and names the process holding it in a clear error instead.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO, Any

from goaicore.errors import ConfigError
from goaicore.extras import needs
from goaicore.kafka.partitioner import partition_for_key
from goaicore.settings.worker import TableStore

with needs("worker"):
    from faust.stores import STORES
    from faust.stores.rocksdb import Store as RocksStore

SCHEME = "goaicore-rocksdb"
_LOCK_NAME = ".worker.lock"


class KeyedRocksStore(RocksStore):
    """Faust's RocksDB store with each key in its own partition's database."""

    def _partition(self, key: bytes) -> int:
        partitions = self.table.partitions
        assert partitions, "a keyed table is built with its partition count"
        return partition_for_key(key, partitions)

    def _open_db(self, key: bytes) -> Any:
        """The key's partition's database, if open (its partition is this worker's)."""
        return self._dbs.get(self._partition(key))

    def _set(self, key: bytes, value: bytes | None) -> None:
        self._db_for_partition(self._partition(key)).put(key, value)

    def _get(self, key: bytes) -> bytes | None:
        db = self._open_db(key)
        return None if db is None else db.get(key)

    def _contains(self, key: bytes) -> bool:
        return self._get(key) is not None

    def _del(self, key: bytes) -> None:
        db = self._open_db(key)
        if db is not None:
            db.delete(key)


def register() -> None:
    """Make ``goaicore-rocksdb://`` a store URL Faust resolves."""
    STORES.aliases[SCHEME] = f"{__name__}:KeyedRocksStore"


def store_url(kind: TableStore) -> str:
    """The Faust store URL of ``GOAICORE_TABLE_STORE``; a clear error without rocksdict."""
    if kind == "memory":
        return "memory://"
    try:
        import rocksdict  # noqa: F401
    except ModuleNotFoundError:
        raise ConfigError(
            "GOAICORE_TABLE_STORE=rocksdb: rocksdict is not installed; it comes with: "
            "pip install 'goaicore[rocksdb]'"
        ) from None
    register()
    return f"{SCHEME}://"


def lock_table_dir(folder: Path) -> IO[str]:
    """Hold ``folder`` for this process while it runs (the returned file keeps the lock)."""
    folder.mkdir(parents=True, exist_ok=True)
    handle = open(folder / _LOCK_NAME, "a+")  # noqa: SIM115 (held for the process's life)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise ConfigError(
            f"the table folder {folder} is in use by {holder}: with GOAICORE_TABLE_STORE="
            "rocksdb each worker needs a GOAICORE_DATA_DIR of its own"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"worker pid {os.getpid()}\n")
    handle.flush()
    return handle
