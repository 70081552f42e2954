"""The providers goaicore knows.

Adding a provider: one file beside this one defining its ``WIRE`` and ``SPEC`` (see
:mod:`goaicore.conversation.providers.wire`), and one line in ``SPECS``.
"""

from __future__ import annotations

from goaicore.conversation.messages import JSONDict, Message
from goaicore.conversation.providers import anthropic, openai, responses
from goaicore.conversation.providers.wire import ProviderSpec, Wire

# In order of preference when settings configure more than one.
SPECS: tuple[ProviderSpec, ...] = (responses.SPEC, openai.SPEC, anthropic.SPEC)
WIRES: dict[str, Wire] = {spec.wire.name: spec.wire for spec in SPECS}


def wire_for(provider: str) -> Wire:
    """The wire format of ``provider``; the offline model (and any other) speaks OpenAI's."""
    return WIRES.get(provider, openai.WIRE)


def assistant_message(provider: str, raw: JSONDict) -> Message:
    """The neutral view over ``provider``'s raw assistant message (kept as is).

    A message stored without a provider name is read as OpenAI's, the wire the
    offline model speaks. Raises ``ValueError`` when ``raw`` cannot be read.
    """
    wire = wire_for(provider)
    return wire.assistant(raw, provider or wire.name)
