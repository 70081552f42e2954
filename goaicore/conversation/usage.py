"""Token usage, summed over the LLM calls of a turn."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens spent; ``llm_calls`` counts the provider calls that spent them.

    ``prompt_tokens`` includes cached and cache-write input tokens, so that it means the
    same thing for every provider.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    llm_calls: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            llm_calls=self.llm_calls + other.llm_calls,
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "llm_calls": self.llm_calls,
        }

    @classmethod
    def of_call(cls, prompt_tokens: int, completion_tokens: int) -> Usage:
        """The usage of one LLM call."""
        return cls(prompt_tokens, completion_tokens, prompt_tokens + completion_tokens, 1)


def as_int(value: Any) -> int:
    """A token count from provider JSON, where absent or null means zero."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
