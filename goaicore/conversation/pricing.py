"""What an LLM call cost, in nano-dollars: an operator's price table first, then the
`genai-prices <https://github.com/pydantic/genai-prices>`_ data (maintained by the
pydantic team, shipped with the package, read offline).

An operator's table is a JSON file (``GOAICORE_PRICES``) of US dollars per million
tokens, with the date and source the prices were taken from::

    {"date": "2026-11-01", "source": "our contract",
     "prices": {"openai": {"gpt-4o-mini": {"input": 0.15, "output": 0.6,
                                          "cache_read": 0.075}}}}

``cache_read`` (prompt tokens served from the provider's cache) and ``cache_write``
(Anthropic's cache writes) default to ``input``. A model found in neither has no
price: its cost stays unknown, never zero. The offline model costs nothing.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from goaicore.errors import ConfigError

log = logging.getLogger(__name__)

OFFLINE = "offline"
PRICED_AS = {"openai-responses": "openai"}
"""Providers whose models are priced as another's (the same models, another API)."""
MILLION = Decimal(1_000_000)
NANOS = Decimal(1_000_000_000)


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input: Decimal
    output: Decimal
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None

    def dollars(self, prompt: int, completion: int, cache_read: int, cache_write: int) -> Decimal:
        """``prompt`` counts every prompt token, the cached ones included."""
        uncached = max(prompt - cache_read - cache_write, 0)
        read = self.cache_read if self.cache_read is not None else self.input
        write = self.cache_write if self.cache_write is not None else self.input
        total = (
            uncached * self.input
            + cache_read * read
            + cache_write * write
            + completion * self.output
        )
        return total / MILLION


class PriceTable:
    """Prices by provider and model: the operator's, then genai-prices' (when installed)."""

    def __init__(self, prices: dict[tuple[str, str], Price] | None = None, fallback: bool = True):
        self.prices = dict(prices or {})
        self.fallback = fallback

    @classmethod
    def from_file(cls, path: Path, fallback: bool = True) -> PriceTable:
        """A table read from an operator's JSON file; ConfigError naming what is wrong."""
        try:
            data = json.loads(path.read_text())
            prices = {
                (provider, model): _price(entry)
                for provider, models in data["prices"].items()
                for model, entry in models.items()
            }
        except OSError as err:
            raise ConfigError(f"GOAICORE_PRICES={str(path)!r}: cannot read it ({err})") from None
        except (ValueError, KeyError, TypeError, AttributeError, ArithmeticError) as err:
            raise ConfigError(
                f"GOAICORE_PRICES={str(path)!r}: not a price table ({type(err).__name__}: {err}); "
                'expected {"date": ..., "source": ..., "prices": {provider: {model: '
                '{"input": ..., "output": ...}}}}'
            ) from None
        return cls(prices, fallback)

    def cost_nanos(
        self,
        provider: str,
        model: str,
        prompt_tokens: int,
        completion_tokens: int,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> int | None:
        """The call's cost in nano-dollars; None when no price is known for the model."""
        if provider == OFFLINE and (provider, model) not in self.prices:
            return 0  # the offline model runs here and costs nothing
        price = self.prices.get((provider, model))
        provider = PRICED_AS.get(provider, provider)
        price = price or self.prices.get((provider, model))
        if price is not None:
            dollars = price.dollars(
                prompt_tokens, completion_tokens, cache_read_tokens, cache_write_tokens
            )
        elif self.fallback:
            found = _genai_price(
                provider,
                model,
                prompt_tokens,
                completion_tokens,
                cache_read_tokens,
                cache_write_tokens,
            )
            if found is None:
                return None
            dollars = found
        else:
            return None
        return int((dollars * NANOS).to_integral_value())


def _price(entry: Any) -> Price:
    def number(name: str) -> Decimal | None:
        value = entry.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ValueError(f"{name} must be a number, got {value!r}")
        amount = Decimal(str(value))
        if amount < 0:
            raise ValueError(f"{name} must not be negative, got {value!r}")
        return amount

    input_price, output_price = number("input"), number("output")
    if input_price is None or output_price is None:
        raise KeyError("input and output are required")
    return Price(input_price, output_price, number("cache_read"), number("cache_write"))


# Models genai-prices does not know: its lookup scans every model before it gives up
# (about 0.15 ms, on every turn of a self-hosted model), and its data does not change
# while the process runs.
_UNPRICED: set[tuple[str, str]] = set()
_UNPRICED_KEPT = 1024


def _genai_price(
    provider: str, model: str, prompt: int, completion: int, cache_read: int, cache_write: int
) -> Decimal | None:
    if (provider, model) in _UNPRICED:
        return None
    try:
        from genai_prices import Usage, calc_price
    except ImportError:
        return None
    usage = Usage(
        input_tokens=prompt,
        output_tokens=completion,
        cache_read_tokens=cache_read or None,
        cache_write_tokens=cache_write or None,
    )
    try:
        total: Decimal = calc_price(usage, model_ref=model, provider_id=provider).total_price
    except LookupError:
        if len(_UNPRICED) >= _UNPRICED_KEPT:
            _UNPRICED.clear()
        _UNPRICED.add((provider, model))
        return None
    return total
