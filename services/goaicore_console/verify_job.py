"""Verify from the console: one conversation at once, or all of them as a job in the
background whose progress the page shows.

Both compare each projected snapshot with the fold of the projected events
(:func:`goaicore.projection.verify_db`, what ``goaicore verify --db`` runs). One job
runs at a time: a second request while one runs shows the running one.
"""

from __future__ import annotations

import asyncio
import logging
import pprint
import threading
from dataclasses import dataclass, field
from datetime import datetime

from goaicore.errors import GoaicoreError
from goaicore.records import utc_now
from goaicore.replay.verify import Difference, VerifyReport
from goaicore_console.database import Database

log = logging.getLogger(__name__)

SHOWN_CHARS = 20_000  # of one side of a difference; the rest is cut, and says so


@dataclass(frozen=True)
class SideBySide:
    """One difference, each side written out for reading."""

    conversation_id: str
    field: str
    stored: str
    replayed: str


def side_by_side(difference: Difference) -> SideBySide:
    return SideBySide(
        difference.conversation_id,
        difference.field,
        _written(difference.stored),
        _written(difference.replayed),
    )


def _written(value: object) -> str:
    text = pprint.pformat(value, width=100, sort_dicts=True)
    if len(text) > SHOWN_CHARS:
        return f"{text[:SHOWN_CHARS]}\n… ({len(text) - SHOWN_CHARS:,} more characters)"
    return text


class VerifyStoppedError(Exception):
    """A verify job cut short because the console stops."""


@dataclass
class VerifyJob:
    """A verify of every projected snapshot, running or finished."""

    started_at: datetime
    total: int
    checked: int = 0
    finished_at: datetime | None = None
    report: VerifyReport | None = None
    error: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    stopping: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def running(self) -> bool:
        return self.finished_at is None

    def tick(self) -> None:
        """One snapshot checked (called from the verify's thread); stops it when asked."""
        if self.stopping.is_set():
            raise VerifyStoppedError("the console is stopping")
        with self._lock:
            self.checked += 1


class VerifyJobs:
    """The console's one verify-everything job."""

    def __init__(self, database: Database, events_topic: str) -> None:
        self.database = database
        self.events_topic = events_topic
        self.current: VerifyJob | None = None
        self._task: asyncio.Task[None] | None = None

    async def one(self, conversation_id: str) -> VerifyReport:
        topic = self.events_topic
        return await self.database.run(lambda q: q.verify(topic, [conversation_id]))

    async def start_all(self) -> VerifyJob:
        """Start verifying every snapshot, unless a job runs already; the job."""
        if self.current is not None and self.current.running:
            return self.current
        job = VerifyJob(started_at=utc_now(), total=0)
        self.current = job  # before any await: a second request finds it running
        self._task = asyncio.create_task(self._run(job))
        return job

    async def _run(self, job: VerifyJob) -> None:
        try:
            job.total = await self.database.run(lambda q: q.snapshot_count())
            topic = self.events_topic
            job.report = await self.database.run(lambda q: q.verify(topic, (), job.tick))
        except VerifyStoppedError:
            job.error = "stopped with the console"
        except GoaicoreError as err:
            job.error = str(err)
        except Exception as err:  # shown on the page; the console goes on
            log.exception("verify of every snapshot failed")
            job.error = f"{type(err).__name__} (the console's log has the details)"
        finally:
            job.finished_at = utc_now()

    async def close(self) -> None:
        """Stop a running job at its next snapshot, and wait for its thread."""
        if self.current is not None:
            self.current.stopping.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
