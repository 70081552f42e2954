"""Log lines as text (the default) or one JSON object per line (``GOAICORE_LOG_FORMAT=json``).

A JSON line carries the time, level, logger and message, and as fields of their own
whichever of ``conversation_id``, ``request_id``, ``event_id``, ``topic``,
``partition`` and ``offset`` apply: set on the record (``extra=``) or, for every
line logged while a request or record is handled, by :func:`log_context`.
"""

from __future__ import annotations

import json
import logging
import logging.config
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from goaicore.settings.logs import LogFormat

FIELDS = (
    "conversation_id",
    "request_id",
    "event_id",
    "topic",
    "partition",
    "offset",
    "error",
    "exit_code",
)
PLAIN = "%(asctime)s %(levelname)s %(name)s %(message)s"

_context: ContextVar[Mapping[str, object]] = ContextVar(
    "goaicore_log_context", default=MappingProxyType({})
)


def origin(record: Any) -> dict[str, object]:
    """The ``topic``, ``partition`` and ``offset`` fields of a consumed record."""
    return {"topic": record.topic, "partition": record.partition, "offset": record.offset}


@contextmanager
def log_context(**fields: object) -> Iterator[None]:
    """Every record logged inside the block (in this task or thread) carries ``fields``."""
    token = _context.set({**_context.get(), **fields})
    try:
        yield
    finally:
        _context.reset(token)


class ContextFilter(logging.Filter):
    """Copies the :func:`log_context` fields onto each record that has none of its own."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in _context.get().items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record, the known fields as keys of their own."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def logging_config(
    level: int | str, log_format: LogFormat, stream: str = "stderr"
) -> dict[str, Any]:
    """A :func:`logging.config.dictConfig` for the root logger, in ``log_format``."""
    formatter: dict[str, Any] = {"()": JsonFormatter} if log_format == "json" else {"format": PLAIN}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"context": {"()": ContextFilter}},
        "formatters": {"goaicore": formatter},
        "handlers": {
            "goaicore": {
                "class": "logging.StreamHandler",
                "stream": f"ext://sys.{stream}",
                "formatter": "goaicore",
                "filters": ["context"],
            }
        },
        "root": {"level": level, "handlers": ["goaicore"]},
    }


def configure(level: int | str, log_format: LogFormat, stream: str = "stderr") -> None:
    logging.config.dictConfig(logging_config(level, log_format, stream))


def configure_from_environment() -> bool:
    """JSON log lines at WARNING when ``GOAICORE_LOG_FORMAT=json`` (a command, or a process
    it starts); True when so configured."""
    if os.environ.get("GOAICORE_LOG_FORMAT", "").strip() != "json":
        return False
    configure(logging.WARNING, "json")
    return True


def line(logger: str, message: str, log_format: LogFormat) -> str:
    """``message`` as one line of ``log_format``, for what is printed before logging is set up."""
    record = logging.LogRecord(logger, logging.INFO, "", 0, message, None, None)
    if log_format == "json":
        return JsonFormatter().format(record)
    return logging.Formatter(PLAIN).format(record)
