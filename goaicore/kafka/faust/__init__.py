"""Every override of faust-streaming's internals, in one place.

They target faust-streaming 0.15 (pyproject pins ``>=0.15.3,<0.16``; a new minor
version is a deliberate upgrade: rerun the takeover, restart and failover tests
on Apache Kafka). Each module says what it fixes and how the fault was seen:

- ``transport``: the consumer's fetch filters with the partitions it started
  with; the producer never partitions a key without knowing the topic;
- ``embedded``: the embedded broker's transport (short fetch waits);
- ``flow_control``: a resume never clears records fetched for the current
  assignment;
- ``recovery``: table recovery re-seeks an active changelog partition that
  stays silent;
- ``lanes``: a topic's records handed to one handler a fetch at a time, not to
  a stream a record at a time (the consumer in ``transport`` runs them);
- ``worker``: the worker without its terminal spinner, which kept the root
  logger at DEBUG;
- ``offsets``: the offsets the worker's group committed, as Faust learnt them;
- ``disk_table``: tables on disk (RocksDB), each key in its partition's
  database without a current event.
"""

from __future__ import annotations

from goaicore.extras import needs

with needs("worker"):
    from faust.transport.drivers import TRANSPORTS

    from goaicore.kafka.faust import embedded, transport


def register() -> None:
    """Make ``goaicore-kafka://`` and ``goaicore-embedded://`` broker URLs resolvable."""
    TRANSPORTS[transport.SCHEME] = f"{transport.__name__}:Transport"
    TRANSPORTS[embedded.SCHEME] = f"{embedded.__name__}:Transport"
