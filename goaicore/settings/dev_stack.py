"""The dev stack's settings: where its data is, and what a running stack tells others.

``goaicore dev`` writes its endpoints to ``<data dir>/dev.json`` once it is ready;
while it runs, every process started in the checkout finds its broker and database
there when the environment names none or names the same ones, and with its broker
its own master key.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

from goaicore.errors import ConfigError
from goaicore.settings.declare import Setting
from goaicore.settings.kafka import BrokerProfile
from goaicore.settings.sealing import parse_master_keys

DEV_FILE_NAME = "dev.json"
DATA_DIR_NAME = ".goaicore"
LOCAL_MASTER_KEYS_FILE = "master-keys"


def _parse_data_dir(name: str, raw: str) -> Path:
    path = Path(raw).expanduser()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{name}={raw!r}: exists and is not a directory")
    return path


DEV_STACK: tuple[Setting, ...] = (
    Setting(
        "data_dir",
        "GOAICORE_DATA_DIR",
        "the nearest `.goaicore/` here or above",
        "Where the dev stack keeps dev.json, the embedded PostgreSQL data and the local "
        "Apache Kafka's data; commands run anywhere inside a checkout find its stack.",
        _parse_data_dir,
        passed=True,
    ),
)


def find_data_dir(start: Path) -> Path:
    """The nearest ``.goaicore`` folder in ``start`` or a folder above it, like git's ``.git``.

    So a command run anywhere inside a checkout finds the stack ``make run`` started
    at its root; with none found, ``.goaicore`` here (where a new stack would keep it).
    """
    for folder in (start, *start.parents):
        candidate = folder / DATA_DIR_NAME
        if candidate.is_dir():
            return candidate if folder != start else Path(DATA_DIR_NAME)
    return Path(DATA_DIR_NAME)


def read_dev_file(data_dir: Path) -> dict[str, Any] | None:
    """The running dev stack's endpoints, or None when no live stack wrote them."""
    path = data_dir / DEV_FILE_NAME
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not _pid_alive(info.get("pid")):
        return None
    return info


def _pid_alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def local_master_keys_file(data_dir: Path) -> Path:
    """The dev stack's master key, made once and kept with its data (mode 0600)."""
    return data_dir / LOCAL_MASTER_KEYS_FILE


def read_local_master_keys(data_dir: Path) -> str | None:
    """The dev stack's master keys, when it made them."""
    try:
        text = local_master_keys_file(data_dir).read_text().strip()
    except FileNotFoundError:
        return None
    except OSError as err:
        path = local_master_keys_file(data_dir)
        raise ConfigError(f"{path}: cannot read it ({err.strerror})") from None
    return parse_master_keys(LOCAL_MASTER_KEYS_FILE, text) if text else None


def _dev_stack_owns_broker(dev: Mapping[str, Any]) -> bool:
    """True when dev.json's broker is one the dev stack started (plaintext, on loopback)."""
    kind = dev.get("broker_kind")
    if kind is not None:
        return kind in ("embedded", "kafka")
    return dev.get("broker_embedded") is True


def fill_from_dev_stack(values: dict[str, Any]) -> bool:
    """Fill what neither the arguments nor the environment gave from a running dev stack.

    ``values`` holds the fields resolved so far (None where nothing gave one). The
    stack's broker applies when none is given or the one given is the same (what its
    banner says to export): it brings its profile and its master keys, so one stack is
    read alike whether found or exported. Its database, likewise, brings the schema it
    projects into. True when the broker is one the stack started (it speaks plaintext).
    """
    if values["data_dir"] is None:
        values["data_dir"] = find_data_dir(Path.cwd())
    dev = read_dev_file(values["data_dir"])
    if dev is None:
        return False
    dev_broker = False
    servers = dev.get("bootstrap_servers")
    if isinstance(servers, str) and values["bootstrap_servers"] in (None, servers):
        values["bootstrap_servers"] = servers
        dev_broker = _dev_stack_owns_broker(dev)
        if values["master_keys"] is None:  # the stack's own log: its own key
            values["master_keys"] = read_local_master_keys(values["data_dir"])
        profile = dev.get("broker_profile")
        if values["broker_profile"] is None and profile in get_args(BrokerProfile):
            values["broker_profile"] = profile
    url = dev.get("database_url")
    if isinstance(url, str) and values["database_url"] in (None, url):
        values["database_url"] = url
        if values["db_schema"] is None and isinstance(dev.get("db_schema"), str):
            values["db_schema"] = dev["db_schema"]  # the schema the stack projects into
    return dev_broker
