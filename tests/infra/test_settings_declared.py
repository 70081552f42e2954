"""Each setting is declared once, in its component's module, and everything else about
settings (the README's table, the variables, the secrets) is derived from that."""

from __future__ import annotations

import re
from dataclasses import fields
from typing import Any

from goaicore.settings import DECLARED, FIELD_VARIABLES, SECRET_FIELDS, VARIABLES, Settings
from tests.readme import README

MASTER_KEY_TEXT = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVpBQkNERUY="  # 32 bytes, base64


def test_every_declared_field_is_a_settings_field_and_every_field_is_declared() -> None:
    declared = [setting.field for setting in DECLARED if setting.field is not None]
    assert len(declared) == len(set(declared)), "a field is declared twice"
    assert set(declared) == {item.name for item in fields(Settings)} - {"env"}
    variables = [setting.variable for setting in DECLARED]
    assert len(variables) == len(set(variables)), "a variable is declared twice"
    assert list(FIELD_VARIABLES) == declared


def test_the_readme_lists_the_variables_in_the_order_they_are_declared() -> None:
    section = README.read_text().split("## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([A-Z0-9_]+)` \|", section, flags=re.MULTILINE)
    assert rows == [variable.name for variable in VARIABLES]


def test_no_secret_setting_is_shown() -> None:
    secrets: dict[str, Any] = {
        "sasl_password": "secret-sasl-password",
        "ssl_key_password": "secret-key-password",
        "openai_api_key": "secret-openai-key",
        "anthropic_api_key": "secret-anthropic-key",
        "http_tokens": ("secret-token-0123456789",),
        "worker_secret": "secret-worker-0123456789",
        "master_keys": f"k1:{MASTER_KEY_TEXT}",
    }
    assert set(secrets) == SECRET_FIELDS
    settings = Settings(env={}, security_protocol="SASL_PLAINTEXT", sasl_username="game", **secrets)
    shown = repr(settings)
    for name, value in secrets.items():
        assert f"{name}=" not in shown
        assert str(value[0] if isinstance(value, tuple) else value) not in shown
    assert "sasl_username='game'" in shown


def test_the_tools_are_left_to_the_worker_unless_named() -> None:
    assert Settings(env={}).tools is None
    assert "GOAICORE_TOOLS" not in Settings(env={}).environment()
    named = Settings(env={"GOAICORE_TOOLS": "mygame.tools:registry"})
    assert named.environment()["GOAICORE_TOOLS"] == "mygame.tools:registry"
