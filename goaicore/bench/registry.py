"""The benchmark suite registry: a name, a function, a list of measurements.

A suite that needs no broker is a function of nothing (:func:`suite`). A suite
that measures through Kafka is a function of a running local broker
(:func:`broker_suite`): the runner calls it once per broker it benchmarks, each
time on a fresh broker, and every row it returns names that broker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from goaicore.kafka.local import LocalBroker

SuiteFn = Callable[[], list["Measurement"]]
BrokerSuiteFn = Callable[["LocalBroker"], list["Measurement"]]


@dataclass(frozen=True)
class Measurement:
    """One measured figure: what, how much, in what unit, and any context.

    ``broker`` names the broker it was measured on (``apache-kafka-3.9.1``,
    ``embedded-tansu-0.6.0``), None when no broker is involved. ``baseline`` names
    the measurement of the same suite, broker and params it is compared with;
    the runner fills in ``ratio`` (this value / the baseline's). ``also_versus``
    names further baselines, whose ratios the runner puts in ``also_ratios``.
    """

    suite: str
    name: str
    value: float
    unit: str
    params: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    broker: str | None = None
    baseline: str | None = None
    ratio: float | None = None
    also_versus: tuple[str, ...] = ()
    also_ratios: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


SUITES: dict[str, SuiteFn] = {}
BROKER_SUITES: dict[str, BrokerSuiteFn] = {}
ONLY_ON: dict[str, tuple[str, str]] = {}
"""Broker suites that run on one kind of broker: (that kind, why), the others skipped."""


def _check_new(name: str) -> None:
    if name in SUITES or name in BROKER_SUITES:
        raise ValueError(f"benchmark suite {name!r} is registered twice")


def suite(name: str) -> Callable[[SuiteFn], SuiteFn]:
    """Register a benchmark suite under ``name`` (run by ``goaicore bench NAME``)."""

    def register(fn: SuiteFn) -> SuiteFn:
        _check_new(name)
        SUITES[name] = fn
        return fn

    return register


def broker_suite(
    name: str, only_on: tuple[str, str] | None = None
) -> Callable[[BrokerSuiteFn], BrokerSuiteFn]:
    """Register a suite that runs on each benchmarked broker, given it started.

    ``only_on`` is (a broker kind, why): the suite runs on that broker only, and its run
    on any other is skipped with the reason.
    """

    def register(fn: BrokerSuiteFn) -> BrokerSuiteFn:
        _check_new(name)
        BROKER_SUITES[name] = fn
        if only_on is not None:
            ONLY_ON[name] = only_on
        return fn

    return register
