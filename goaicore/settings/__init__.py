"""goaicore's settings: each component declares its own, ``Settings`` resolves them all.

Each module declares its component's settings once (:class:`~goaicore.settings.declare.Setting`):
``kafka``, ``postgres``, ``providers``, ``worker``, ``logs``, ``http``, ``sealing``,
``dev_stack`` and ``loaders``. ``settings`` composes them into :class:`Settings`,
the README's table (:data:`VARIABLES`) and each field's variable. The package
imports nothing of goaicore but its errors, so every layer may read its settings.
"""

from __future__ import annotations

from goaicore.errors import ConfigError
from goaicore.settings.declare import Setting, Variable
from goaicore.settings.dev_stack import (
    DATA_DIR_NAME,
    DEV_FILE_NAME,
    LOCAL_MASTER_KEYS_FILE,
    find_data_dir,
    local_master_keys_file,
    read_dev_file,
    read_local_master_keys,
)
from goaicore.settings.kafka import (
    SASL_MECHANISMS,
    SECURITY_PROTOCOLS,
    BrokerProfile,
    LocalBrokerKind,
    SaslMechanism,
    SecurityProtocol,
    parse_bootstrap_servers,
)
from goaicore.settings.loaders import LOADER_VARIABLES
from goaicore.settings.logs import LogFormat
from goaicore.settings.postgres import mask_password
from goaicore.settings.settings import (
    ALWAYS_PASSED,
    DECLARED,
    FIELD_VARIABLES,
    FROM_ENVIRONMENT,
    SECRET_FIELDS,
    VARIABLES,
    Settings,
)
from goaicore.settings.worker import DEFAULT_SYSTEM_PROMPT, TableStore

__all__ = [
    "ALWAYS_PASSED",
    "DATA_DIR_NAME",
    "DECLARED",
    "DEFAULT_SYSTEM_PROMPT",
    "DEV_FILE_NAME",
    "FIELD_VARIABLES",
    "FROM_ENVIRONMENT",
    "LOADER_VARIABLES",
    "LOCAL_MASTER_KEYS_FILE",
    "SASL_MECHANISMS",
    "SECRET_FIELDS",
    "SECURITY_PROTOCOLS",
    "VARIABLES",
    "BrokerProfile",
    "ConfigError",
    "LocalBrokerKind",
    "LogFormat",
    "SaslMechanism",
    "SecurityProtocol",
    "Setting",
    "Settings",
    "TableStore",
    "Variable",
    "find_data_dir",
    "local_master_keys_file",
    "mask_password",
    "parse_bootstrap_servers",
    "read_dev_file",
    "read_local_master_keys",
]
