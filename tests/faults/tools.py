"""The tools the fault suite's chat requests may call: the game's and one of any size."""

from __future__ import annotations

from goaicore.conversation.tools import Tool
from goaicore_store.chat.game_tools import registry as game_tools
from tests.chat_agent.big_tools import big_result

registry: list[Tool] = [*game_tools, big_result]
