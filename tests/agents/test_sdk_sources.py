"""The OpenAI Agents SDK's sources (its sdist, with its tests), fetched once into the cache.

The fetch itself runs wherever the SDK's session tests first run; here, a PyPI out of
reach and a cache already filled, neither touching the network.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from goaicore.testing.agents_sdk_source import SdkSourcesUnavailable, sdk_sources, sources_dir


def test_an_unreachable_pypi_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOAICORE_KAFKA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # nothing listens
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_RETRIES", "0")

    with pytest.raises(SdkSourcesUnavailable) as caught:
        sdk_sources()

    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("pip could not download the sources of openai-agents==0.24.0")
    assert "is PyPI reachable?" in message
    assert not sources_dir().exists()  # nothing half-fetched left to be taken as the cache


def test_fetched_sources_are_read_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOAICORE_KAFKA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # a fetch would fail
    root = tmp_path / "cache" / "openai-agents-0.24.0" / "openai_agents-0.24.0"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "conftest.py").write_text("")
    (root / "pyproject.toml").write_text("")

    assert sources_dir() == root
    assert sdk_sources() == root
