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


def seconds(low: float = 0.0) -> Callable[[str], float]:
    """A number of seconds, at least ``low`` (and finite)."""

    def parse(raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number of seconds, got {raw!r}") from None
        if not value >= low or value == float("inf"):
            raise argparse.ArgumentTypeError(f"must be a finite number of at least {low:g}")
        return value

    return parse


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
