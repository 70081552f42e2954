"""goaicore's Faust transport: aiokafka, with a fetch that cannot lose records.

faust-streaming (0.15) fetches with the consumer's live set of active
partitions and later filters what came back against that same set. The set
changes while the fetch runs (table recovery pauses its changelog partitions
when it is done), and two things then go wrong:

- aiokafka reads an empty partition set as "every assigned partition", so a
  fetch that started with only changelog partitions active returned the
  records of the stream partitions as well;
- Faust dropped every record of a partition no longer in the set, while
  aiokafka had already moved its position past them. A partition with no
  committed offset yet (a worker killed before its first commit) is never
  sought back, so those records were never processed.

Seen as a worker that took over partitions from a killed one and then folded
nothing more (about one takeover in twenty). Here each fetch works on a copy
of the active set taken when it starts, and the same copy filters what it
returns: every record handed over by aiokafka reaches a stream or is handled
by Faust's own seek-back when flow stopped meanwhile.

Used for every broker (``goaicore-kafka://``); the embedded broker's transport
(``goaicore.broker.faust_embedded``) builds on it.
"""

from __future__ import annotations

from typing import Any

from faust.transport.drivers import TRANSPORTS
from faust.transport.drivers import aiokafka as driver

SCHEME = "goaicore-kafka"


class SteadyConsumer(driver.Consumer):
    """A Faust consumer whose fetches use a fixed copy of the active partitions."""

    async def _wait_next_records(self, timeout: float) -> tuple[Any, Any]:  # noqa: ASYNC109 (Faust's signature)
        if not self.flow_active:
            await self.wait(self.can_resume_flow)  # type: ignore[arg-type]
        try:
            self.not_waiting_next_records.set()
            active: frozenset[Any] | None = (
                None if self.app.client_only else frozenset(self._get_active_partitions())
            )
            if active is None or active:
                records = await self._getmany(
                    active_partitions=active,  # type: ignore[arg-type]
                    timeout=timeout,
                )
                return records, active
            # Nothing active: fetching now would ask aiokafka for every partition.
            await self.sleep(1)
            return {}, active
        finally:
            self.not_waiting_next_records.set()


class Transport(driver.Transport):
    Consumer = SteadyConsumer


def register() -> None:
    """Make ``goaicore-kafka://`` (and ``goaicore-embedded://``) broker URLs resolvable."""
    TRANSPORTS[SCHEME] = f"{__name__}:Transport"
    from goaicore.broker import faust_embedded

    TRANSPORTS[faust_embedded.SCHEME] = f"{faust_embedded.__name__}:Transport"
