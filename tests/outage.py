"""Helpers for the tests that stop a broker under long-lived clients."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from goaicore import ReplySubscriber
from goaicore.config import Settings
from goaicore.errors import GoaicoreError

T = TypeVar("T")

RECOVERS_WITHIN = 120.0
"""How long a client may take to work again once the broker is back."""


def eventually(call: Callable[[], T]) -> T:
    """``call`` tried again on goaicore's errors until it works: the broker is back, but
    a client may need a moment to find it again."""
    deadline = time.monotonic() + RECOVERS_WITHIN
    while True:
        try:
            return call()
        except GoaicoreError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


class Subscribed:
    """A ReplySubscriber iterated in a thread for the whole test, as a gateway would."""

    def __init__(self, settings: Settings, group_id: str) -> None:
        self.subscriber = ReplySubscriber(settings, group_id=group_id, from_beginning=True)
        self.request_ids: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for reply in self.subscriber.replies(idle_timeout=1):
                    self.request_ids.add(reply.request_id)
            except GoaicoreError:
                time.sleep(1)  # e.g. a commit while the broker is down: iterate again

    def wait_for(self, request_id: str) -> None:
        deadline = time.monotonic() + RECOVERS_WITHIN
        while request_id not in self.request_ids:
            assert time.monotonic() < deadline, f"the subscriber never got {request_id}"
            time.sleep(0.2)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.subscriber.close()
