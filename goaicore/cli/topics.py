"""``goaicore create-topics``: create the prefix's topics and check existing ones.

The compose stack and the Kubernetes Job run it once before the workers start, so
topics get the configured partitions and replication factor from one place rather
than from whichever process happens to start first.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from goaicore.cli.args import seconds
from goaicore.extras import needs


def register(subparsers: Any) -> None:
    create: argparse.ArgumentParser = subparsers.add_parser(
        "create-topics",
        help="create the topics under GOAICORE_TOPIC_PREFIX (safe to run again)",
    )
    create.add_argument(
        "--wait",
        type=seconds(0.0),
        default=0.0,
        metavar="SECONDS",
        help="retry while the brokers do not answer yet, up to this long (default: no retry)",
    )
    create.add_argument(
        "--timeout",
        type=seconds(1.0),
        default=30.0,
        metavar="SECONDS",
        help="timeout of each admin request (default: %(default)g)",
    )
    create.set_defaults(handler=handle_create_topics)


DEFAULT = "the broker's default"


def handle_create_topics(args: argparse.Namespace) -> int:
    with needs("kafka"):
        from kafka.errors import KafkaError

    from goaicore.errors import BrokerError
    from goaicore.kafka.connection import BrokerUnreachableError
    from goaicore.kafka.topics import ensure_topics
    from goaicore.settings import Settings

    settings = Settings()
    settings.require_bootstrap()
    deadline = time.monotonic() + max(args.wait, 0.0)
    while True:
        try:
            statuses = ensure_topics(settings, timeout_s=args.timeout)
            break
        except (KafkaError, BrokerUnreachableError) as err:
            if time.monotonic() >= deadline:
                if isinstance(err, BrokerUnreachableError):
                    raise
                raise BrokerError(
                    f"the brokers at {settings.bootstrap_servers} did not answer ({err})"
                ) from err
            print(f"brokers not ready ({type(err).__name__}); retrying", flush=True)
            time.sleep(2.0)
    # As ensure_topics created them: a factor of -1 is the brokers' default, read back
    # when a broker reports it.
    for status in statuses:
        line = f"{status.action:7} {status.name} partitions={status.partitions}"
        if status.action == "created":
            replication = status.replication
            insync = status.min_insync_replicas
            line += f" replication={replication if replication is not None else DEFAULT}"
            line += f" min.insync.replicas={insync if insync is not None else DEFAULT}"
        print(line)
    return 0
