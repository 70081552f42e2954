"""Faust's table recovery, with a watchdog for an active changelog partition that stays silent.

Seen on Apache Kafka about once in fifty takeovers: a worker promoted a
changelog partition it had read as a standby to active, recovery sought it to
its start, and not one record of it ever arrived; recovery waited forever and
the worker folded nothing more (Faust only logs "No event received for active
tp ... since recovery start"). The cause was not found. The watchdog acts on
the symptom: a partition with records left to recover that has delivered
nothing ``KICK_AFTER`` seconds into recovery is sought to its recovery offset
again, once per recovery, with a warning. The seek is what recovery already
did, so when nothing is wrong it changes nothing.

``GOAICORE_TEST_LOSE_RECOVERY_SEEK=1`` is a fault hook for tests: the first
recovery seek of a partition promoted from standby goes to its end instead,
which reproduces the silent partition deterministically.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from faust.tables.manager import TableManager
from faust.tables.recovery import Recovery

log = logging.getLogger(__name__)

KICK_AFTER = 15.0
LOSE_SEEK_HOOK = "GOAICORE_TEST_LOSE_RECOVERY_SEEK"


class SteadyRecovery(Recovery):
    """:class:`faust.tables.recovery.Recovery` that re-seeks silent active partitions."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._kicked: set[Any] = set()
        self._standby_before: set[Any] = set()
        self._lose_seek = os.environ.get(LOSE_SEEK_HOOK) == "1"

    async def on_rebalance(
        self, assigned: Any, revoked: Any, newly_assigned: Any, generation_id: int = 0
    ) -> None:
        self._standby_before = set(self.standby_tps)
        await super().on_rebalance(assigned, revoked, newly_assigned, generation_id)

    def _set_recovery_started(self) -> None:
        super()._set_recovery_started()
        self._kicked.clear()

    async def _seek_offsets(self, consumer: Any, tps: Any, offsets: Any, title: str) -> None:
        promoted = set(tps) & self._standby_before if title == "active" else set()
        if self._lose_seek and promoted:
            self._lose_seek = False
            ends = await consumer.highwaters(*promoted)
            log.warning("fault hook %s: seeking %s to their end", LOSE_SEEK_HOOK, sorted(promoted))
            await super()._seek_offsets(consumer, set(tps) - promoted, offsets, title)
            await consumer.seek_wait({tp: ends[tp] for tp in promoted})
            return
        await super()._seek_offsets(consumer, tps, offsets, title)

    async def _verify_remaining(self, now: float, stats: Any) -> None:
        await super()._verify_remaining(now, stats)
        started = self._recovery_started_at
        if started is None or now - started < KICK_AFTER:
            return
        silent = {
            tp
            for tp in stats
            if tp in self.active_tps
            and tp not in self._active_events_received_at
            and tp not in self._kicked
        }
        if not silent:
            return
        self._kicked |= silent
        log.warning(
            "active changelog partitions %s delivered nothing in %.0f s of recovery: seeking "
            "them to their recovery offsets again",
            sorted(f"{tp.topic}[{tp.partition}]" for tp in silent),
            now - started,
        )
        await super()._seek_offsets(self.app.consumer, silent, self.active_offsets, "active")


class SteadyTableManager(TableManager):
    """Faust's table manager with :class:`SteadyRecovery`."""

    @property
    def recovery(self) -> Recovery:
        if self._recovery is None:
            self._recovery = SteadyRecovery(self.app, self, beacon=self.beacon, loop=self.loop)
        return self._recovery
