"""Optional dependencies: an SDK or client library that is missing names the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingExtraError(ImportError):
    """A package an optional part of goaicore needs is not installed."""


def require(module: str, extra: str) -> ModuleType:
    """Import ``module``; when it is missing, say which goaicore extra installs it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name != module.split(".")[0]:
            raise
        raise MissingExtraError(
            f"{module!r} is not installed; it comes with: pip install 'goaicore[{extra}]'"
        ) from None
