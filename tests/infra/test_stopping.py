"""``Stopping``: a signal only asks; the waits take the stop up, where nothing is half done."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from goaicore.stopping import Stopping, StopRequested


def test_a_pause_sleeps_its_time_until_a_stop_is_asked_for() -> None:
    stopping = Stopping()
    started = time.monotonic()
    stopping.pause(0.05)
    assert time.monotonic() - started >= 0.05
    stopping.check()
    assert not stopping.is_set()


def test_a_stop_asked_for_from_another_thread_ends_a_long_pause() -> None:
    stopping = Stopping()
    threading.Timer(0.05, stopping.request).start()
    with pytest.raises(StopRequested):
        stopping.pause(600)
    assert stopping.is_set()
    stopping.request()  # asked again: still the one stop
    with pytest.raises(StopRequested):
        stopping.check()
    with pytest.raises(StopRequested):
        stopping.pause(0)


def test_the_stop_passes_by_an_except_exception() -> None:
    stopping = Stopping()
    stopping.request()

    def a_retrying_wait() -> None:
        try:
            stopping.pause(1)
        except Exception:  # a wait loop's retry
            pytest.fail("a retry swallowed the stop")

    with pytest.raises(StopRequested):
        a_retrying_wait()


def test_a_signal_handler_that_asks_ends_the_main_threads_pause() -> None:
    stopping = Stopping()
    previous = signal.signal(signal.SIGUSR2, lambda signum, frame: stopping.request())
    try:
        threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGUSR2)).start()
        with pytest.raises(StopRequested):
            stopping.pause(600)
    finally:
        signal.signal(signal.SIGUSR2, previous)
        stopping.close()


def test_it_serves_where_a_threading_event_does() -> None:
    stopping = Stopping()
    assert not stopping.wait(0.01)
    assert not stopping.is_set()
    threading.Timer(0.05, stopping.request).start()
    assert stopping.wait()  # no timeout: until asked
    assert stopping.wait(0)
    stopping.close()
