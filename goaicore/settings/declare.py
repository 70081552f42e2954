"""One setting, declared once, and the parsers settings share.

A :class:`Setting` holds everything about one environment variable: the
``Settings`` field it fills, its README row, how its text is checked and what it
defaults to. The README table, each field's variable and the reading of the
environment are all derived from these declarations, so adding a setting is one
declaration in its component's module plus its ``Settings`` field.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from goaicore.errors import ConfigError

Parser = Callable[[str, str], Any]
"""Checks a variable's text and returns its value: ``parse(variable, text)``; a bad
value raises :class:`ConfigError` naming the variable, in one line."""


@dataclass(frozen=True)
class Variable:
    """One documented environment variable (the README's configuration table)."""

    name: str
    default: str
    meaning: str


@dataclass(frozen=True)
class Setting:
    """One environment variable and everything about it.

    ``field`` is the ``Settings`` field it fills (None: read where it is used, or
    folded into another field). ``parse`` is None for the settings a component
    resolves itself, together with others (the Kafka credentials, the HTTP tokens).
    ``default`` is the value when neither a keyword argument, the environment nor
    the dev stack gives one; ``default_text`` says it in the README. ``secret``
    settings are never shown; ``passed`` ones are always handed to a child process.
    """

    field: str | None
    variable: str
    default_text: str
    meaning: str
    parse: Parser | None = None
    default: Any = None
    secret: bool = False
    passed: bool = False

    @property
    def documented(self) -> Variable:
        """The README's row of this setting."""
        return Variable(self.variable, self.default_text, self.meaning)


def by_field(settings: Iterable[Setting]) -> dict[str, Setting]:
    """The settings that fill a ``Settings`` field, by that field's name."""
    return {s.field: s for s in settings if s.field is not None}


def read_env(env: Mapping[str, str], name: str) -> str | None:
    """The variable's text without surrounding spaces; None when unset or blank."""
    value = env.get(name)
    if value is None:
        return None
    value = value.strip()
    return value or None


def text(name: str, raw: str) -> str:
    """Any text, as given."""
    return raw


def whole_number(low: int, high: int) -> Callable[[str, str], int]:
    """A parser of a whole number from ``low`` to ``high``."""

    def parse(name: str, raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise ConfigError(f"{name}={raw!r}: must be a whole number") from None
        if not low <= value <= high:
            raise ConfigError(f"{name}={raw!r}: must be from {low} to {high}")
        return value

    return parse


def seconds(low: float, high: float) -> Callable[[str, str], float]:
    """A parser of a number of seconds from ``low`` to ``high``."""

    def parse(name: str, raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(f"{name}={raw!r}: must be a number of seconds") from None
        if not low <= value <= high:
            raise ConfigError(f"{name}={raw!r}: must be from {low:g} to {high:g}")
        return value

    return parse


def one_of(*choices: str) -> Callable[[str, str], str]:
    """A parser of a variable that takes exactly one of ``choices``."""
    listed = " or ".join(repr(choice) for choice in choices)

    def parse(name: str, raw: str) -> str:
        if raw in choices:
            return raw
        raise ConfigError(f"{name}={raw!r}: must be {listed}")

    return parse


def switch(name: str, raw: str) -> bool:
    """``on``/``off`` (also true/false, yes/no, 1/0)."""
    value = raw.strip().lower()
    if value in ("on", "true", "yes", "1"):
        return True
    if value in ("off", "false", "no", "0"):
        return False
    raise ConfigError(f"{name}={raw!r}: must be on or off")


def http_url(name: str, raw: str) -> str:
    """An ``http://`` or ``https://`` URL."""
    if not re.match(r"^https?://[^/\s]+", raw):
        raise ConfigError(f"{name}={raw!r}: must be an http:// or https:// URL")
    return raw


def existing_file(name: str, raw: str) -> Path:
    """The path of a file that exists now."""
    path = Path(raw).expanduser()
    if not path.is_file():
        raise ConfigError(f"{name}={raw!r}: no such file")
    return path
