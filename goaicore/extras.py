"""Optional dependencies: an SDK or client library that is missing names the extra to install.

The core (records, the conversation library, the CLI) needs fastavro and rich alone;
Kafka, PostgreSQL, Faust, the LLM SDKs and the local servers come with extras (see
``pyproject.toml``). Where one of them is imported, :func:`needs` turns its absence into
a :class:`MissingExtraError` that says what to install.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from goaicore.errors import ConfigError


class MissingExtraError(ImportError, ConfigError):
    """A package an optional part of goaicore needs is not installed."""


@contextmanager
def needs(extra: str) -> Iterator[None]:
    """Imports in this block come with goaicore's ``extra``; a missing one says so."""
    try:
        yield
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if not top or top.startswith("goaicore"):
            raise  # our own module missing is a bug, not an extra
        raise MissingExtraError(
            f"{top!r} is not installed; it comes with: pip install 'goaicore[{extra}]'",
            name=top,
        ) from None


def require(module: str, extra: str) -> ModuleType:
    """Import ``module``, which comes with goaicore's ``extra``."""
    with needs(extra):
        return importlib.import_module(module)
