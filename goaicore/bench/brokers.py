"""Settings for a benchmark suite on the local broker the runner started for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from goaicore.kafka.local import LocalBroker
from goaicore.settings import Settings

PARTITIONS = 6


def broker_settings(broker: LocalBroker, prefix: str, data_dir: Path, **changes: Any) -> Settings:
    """Settings on ``broker`` with its client profile, none of the environment's."""
    return Settings(
        env={},
        bootstrap_servers=broker.bootstrap_servers,
        broker_profile=broker.profile,
        topic_prefix=prefix,
        partitions=PARTITIONS,
        data_dir=data_dir,
        **changes,
    )
