"""Argument types: a bad number or time is refused by the parser, with the flag's name."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, datetime


def integer(low: int, high: int | None = None) -> Callable[[str], int]:
    """An int in [low, high]; argparse prints its message next to the flag."""

    def parse(raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {raw!r}") from None
        if value < low or (high is not None and value > high):
            span = f"at least {low}" if high is None else f"from {low} to {high}"
            raise argparse.ArgumentTypeError(f"must be {span}, got {value}")
        return value

    return parse


MAX_SECONDS = 7 * 86400.0
"""The longest duration a command waits: a week. More is a mistake (and past about 290
years, more than the clocks and waits of the standard library hold)."""
MAX_DAYS = 100 * 365.0
"""The most days a retention age may name: a century."""


def seconds(
    low: float = 0.0, *, above: bool = False, high: float = MAX_SECONDS
) -> Callable[[str], float]:
    """A finite number of seconds from ``low`` (more than ``low`` with ``above``) to
    ``high``; inf, nan and absurd values are refused by the parser."""
    return _number("seconds", low, above, high)


def days(low: float = 0.0, *, above: bool = True, high: float = MAX_DAYS) -> Callable[[str], float]:
    """A finite number of days, more than ``low`` (by default) and at most ``high``."""
    return _number("days", low, above, high)


def _number(unit: str, low: float, above: bool, high: float) -> Callable[[str], float]:
    def parse(raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number of {unit}, got {raw!r}") from None
        fits = value > low if above else value >= low
        if not (fits and value <= high):  # nan fails both comparisons
            least = f"more than {low:g}" if above else f"a finite number of at least {low:g}"
            raise argparse.ArgumentTypeError(
                f"must be {least} and at most {high:g} {unit}, got {raw!r}"
            )
        return value

    return parse


POSITIVE_SECONDS = seconds(0.0, above=True)
POSITIVE = integer(1)
OFFSET = integer(0)
PORT = integer(1, 65535)


def moment(raw: str) -> datetime:
    """An ISO time; without a zone it is UTC."""
    try:
        value = datetime.fromisoformat(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an ISO time, got {raw!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def key_value(raw: str) -> tuple[str, str]:
    """``KEY=VALUE`` (the value may be empty or hold ``=``)."""
    key, sep, value = raw.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {raw!r}")
    return key, value
