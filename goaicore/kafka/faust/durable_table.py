"""A Faust table whose writes (and deletions) can be awaited until their changelog record is
on the broker.

Faust hands a table's changelog records to its producer buffer and moves on; a
process killed a moment later may lose a write that has already had effects
outside (a reply published from it, say). :meth:`DurableTable.put` sets a key and
returns once the broker has acknowledged the record that restores it after a crash.
"""

from __future__ import annotations

from typing import Any

import faust
from faust.types import FutureMessage


class DurableTable(faust.Table[Any, Any]):
    """A ``faust.Table`` with an awaitable :meth:`put`."""

    _last_write: FutureMessage | None = None

    def send_changelog(self, *args: Any, **kwargs: Any) -> FutureMessage:
        written: FutureMessage = super().send_changelog(*args, **kwargs)
        self._last_write = written
        return written

    async def put(self, key: Any, value: Any) -> None:
        """``table[key] = value``, returning when its changelog record is on the broker."""
        self[key] = value
        written = self._last_write  # set by the assignment, with no await in between
        assert written is not None
        await written

    async def remove(self, key: Any) -> None:
        """``del table[key]`` (if present), returning when its tombstone is on the broker."""
        if key not in self:
            return
        del self[key]
        written = self._last_write  # set by the deletion, with no await in between
        assert written is not None
        await written
