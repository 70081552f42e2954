"""The benchmark suite registry: a name, a function, a list of measurements."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

SuiteFn = Callable[[], list["Measurement"]]


@dataclass(frozen=True)
class Measurement:
    """One measured figure: what, how much, in what unit, and any context."""

    suite: str
    name: str
    value: float
    unit: str
    params: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


SUITES: dict[str, SuiteFn] = {}


def suite(name: str) -> Callable[[SuiteFn], SuiteFn]:
    """Register a benchmark suite under ``name`` (run by ``goaicore bench NAME``)."""

    def register(fn: SuiteFn) -> SuiteFn:
        if name in SUITES:
            raise ValueError(f"benchmark suite {name!r} is registered twice")
        SUITES[name] = fn
        return fn

    return register
