"""Pricing LLM calls: an operator's table first, then the shipped genai-prices data; an
unknown model has no cost (never zero), and cached prompt tokens are priced as cached."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goaicore.conversation.pricing import PriceTable
from goaicore.conversation.providers import AnthropicProvider, OpenAIProvider
from goaicore.errors import ConfigError


def _table(tmp_path: Path, prices: object) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"date": "2026-11-01", "source": "test", "prices": prices}))
    return path


def test_an_operators_price_wins_and_prices_cached_tokens(tmp_path: Path) -> None:
    path = _table(
        tmp_path,
        {"openai": {"gpt-4o": {"input": 1.5, "output": 6, "cache_read": 0.75}}},
    )
    table = PriceTable.from_file(path)
    # 800 uncached at 1.5, 200 cached at 0.75, 100 out at 6 (USD per million tokens).
    assert table.cost_nanos("openai", "gpt-4o", 1000, 100, cache_read_tokens=200) == 1_950_000
    assert table.cost_nanos("openai", "gpt-4o", 1000, 100) == 2_100_000


def test_the_shipped_data_prices_known_models_offline() -> None:
    table = PriceTable()
    # gpt-4o: $2.50 in, $1.25 cached in, $10 out per million tokens.
    assert table.cost_nanos("openai", "gpt-4o", 1000, 100, cache_read_tokens=200) == 3_250_000
    assert table.cost_nanos("anthropic", "claude-sonnet-4-20250514", 1000, 100) is not None


def test_an_unknown_model_has_no_cost_and_the_offline_model_costs_nothing(
    tmp_path: Path,
) -> None:
    assert PriceTable().cost_nanos("openai", "gpt-test", 10, 10) is None
    assert PriceTable().cost_nanos("openai", "gpt-test", 10, 10) is None  # remembered
    # An operator's price for it still counts, and known models are still priced.
    priced = PriceTable.from_file(
        _table(tmp_path, {"openai": {"gpt-test": {"input": 1, "output": 2}}})
    )
    assert priced.cost_nanos("openai", "gpt-test", 1000, 1000) == 3_000_000
    assert PriceTable().cost_nanos("openai", "gpt-4o", 1000, 100) == 3_500_000
    assert PriceTable(fallback=False).cost_nanos("openai", "gpt-4o", 10, 10) is None
    assert PriceTable().cost_nanos("offline", "goaicore-offline", 10, 10) == 0


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "cannot read it"),
        ("not json", "not a price table"),
        ({"openai": {"m": {"input": 1}}}, "input and output are required"),
        ({"openai": {"m": {"input": -1, "output": 1}}}, "must not be negative"),
        ({"openai": {"m": {"input": "lots", "output": 1}}}, "not a price table"),
    ],
)
def test_a_bad_table_is_a_config_error_naming_the_variable(
    tmp_path: Path, content: object, says: str
) -> None:
    path = tmp_path / "prices.json"
    if isinstance(content, str):
        path.write_text(content)
    elif content is not None:
        path = _table(tmp_path, content)
    with pytest.raises(ConfigError, match=says) as caught:
        PriceTable.from_file(path)
    assert str(caught.value).startswith("GOAICORE_PRICES=")


def test_providers_report_cached_prompt_tokens() -> None:
    openai = OpenAIProvider("gpt-4o", api_key="k").parse_response(
        {
            "model": "gpt-4o",
            "choices": [
                {"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": 1000,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 600},
            },
        }
    )
    assert (openai.usage.prompt_tokens, openai.cache_read_tokens) == (1000, 600)
    anthropic = AnthropicProvider("claude-x", api_key="k").parse_response(
        {
            "model": "claude-x",
            "content": [{"type": "text", "text": "hi"}],
            "stop_reason": "end_turn",
            "usage": {
                "input_tokens": 100,
                "cache_read_input_tokens": 700,
                "cache_creation_input_tokens": 200,
                "output_tokens": 5,
            },
        }
    )
    assert anthropic.usage.prompt_tokens == 1000
    assert (anthropic.cache_read_tokens, anthropic.cache_write_tokens) == (700, 200)
