"""How processes log: the format of every line the worker, the projector and the CLI write."""

from __future__ import annotations

from typing import Literal, get_args

from goaicore.settings.declare import Setting, one_of

LogFormat = Literal["plain", "json"]

LOGS: tuple[Setting, ...] = (
    Setting(
        "log_format",
        "GOAICORE_LOG_FORMAT",
        "`plain`",
        "`json` makes the worker, the projector and the CLI log one JSON object per line, "
        "with conversation_id, request_id, event_id, topic, partition and offset as fields.",
        one_of(*get_args(LogFormat)),
        "plain",
    ),
)
