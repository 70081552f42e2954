"""Which provider settings select; one provider per model name.

``OPENAI_API_KEY`` (or ``OPENAI_BASE_URL``, for a local OpenAI-compatible server)
selects OpenAI, else ``ANTHROPIC_API_KEY`` selects Anthropic (the order of
``registry.SPECS``), else the deterministic offline model answers, labelled as such.
A request may name its own model; providers are built once per model and kept, so
SDK connection pools are reused across requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from goaicore.conversation.providers import openai
from goaicore.conversation.providers.base import Provider, Transport
from goaicore.conversation.providers.offline import OfflineProvider
from goaicore.conversation.providers.registry import SPECS
from goaicore.conversation.providers.wire import ProviderSpec
from goaicore.settings import Settings


@dataclass
class Providers:
    """Providers by model name, for the backend the settings select, on ``transport``
    (see :class:`~goaicore.conversation.providers.base.SdkProvider`)."""

    settings: Settings
    transport: Transport = "httpx"
    _cache: dict[str | None, Provider] = field(default_factory=dict)

    @property
    def spec(self) -> ProviderSpec | None:
        """The selected provider's spec; None for the offline model."""
        return next((spec for spec in SPECS if spec.configured(self.settings)), None)

    @property
    def backend(self) -> str:
        """``openai``, ``anthropic`` or ``offline``."""
        spec = self.spec
        return spec.wire.name if spec else "offline"

    @property
    def label(self) -> str:
        """What to tell an operator about the model in use."""
        if self.spec is None:
            return "offline model (deterministic, no API key set)"
        return f"{self.backend} {self.default_model}"

    @property
    def default_model(self) -> str:
        if self.settings.model:
            return self.settings.model
        spec = self.spec
        return spec.default_model if spec else openai.SPEC.default_model

    def get(self, model: str | None = None) -> Provider:
        """The provider for ``model`` (the configured one when None)."""
        key = model or None
        if key not in self._cache:
            self._cache[key] = self._make(model or self.default_model)
        return self._cache[key]

    def _make(self, model: str) -> Provider:
        spec = self.spec
        return spec.build(self.settings, model, self.transport) if spec else OfflineProvider()

    async def aclose(self) -> None:
        """Close the HTTP clients the providers opened in the running event loop."""
        for provider in self._cache.values():
            close = getattr(provider, "aclose", None)
            if close is not None:
                await close()
