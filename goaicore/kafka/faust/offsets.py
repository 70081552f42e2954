"""The offsets a Faust worker's consumer group has committed, as Faust learnt them."""

from __future__ import annotations

from typing import Any

from faust.types import TP


def committed_offset(app: Any, topic: str, partition: int) -> int | None:
    """The offset of ``topic[partition]`` the worker's consumer group has committed, as
    Faust learnt it on assignment (or since): None when it knows none."""
    offsets = getattr(app.consumer, "_committed_offset", None)  # Faust keeps no public one
    if offsets is None:
        return None
    value = offsets.get(TP(topic, partition))
    return int(value) if value is not None else None
