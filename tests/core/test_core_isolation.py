"""The conversation core is usable on its own: no Kafka, Faust or psycopg."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


def test_core_imports_no_broker_or_database_client() -> None:
    result = run(
        """
        import goaicore, goaicore.conversation.chat, goaicore.testing
        import goaicore.conversation.compaction, goaicore.conversation.providers
        from goaicore.conversation.compaction import (
            OpenAITokenCounter, Summarize, TriggeredCompactor,
        )
        from goaicore.conversation.providers import (
            OpenAIProvider, AnthropicProvider, OfflineProvider,
        )
        import sys
        banned = {"kafka", "faust", "aiokafka", "psycopg"}
        loaded = sorted({m.split(".")[0] for m in sys.modules} & banned)
        assert not loaded, loaded
        print("clean")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "clean"


def test_import_goaicore_does_not_load_the_sdks() -> None:
    result = run(
        """
        import sys
        from goaicore import Chat, tool
        from goaicore.conversation.providers import OfflineProvider
        print(sorted({"openai", "anthropic"} & set(sys.modules)))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_sync_api_works_from_a_plain_script() -> None:
    result = run(
        """
        from goaicore import Chat, tool
        from goaicore.conversation.providers import OfflineProvider

        @tool
        def get_score(team: str) -> dict:
            \"\"\"Current score of a team.\"\"\"
            return {"team": team, "score": 2}

        chat = Chat(provider=OfflineProvider(), max_tool_iterations=10, compactor=None)
        state = chat.append_to_state(None, "Player checked in at Harrogate Theatre")
        result = chat.chat_with_state(state, system="You are a game assistant",
                                      user="get_score for team Leeds", tools=[get_score])
        print(result.text)
        print(chat.chat(system="s", user="hi"))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        '[offline] get_score returned {"team": "Leeds", "score": 2}',
        "[offline] You said: hi",
    ]


async def test_the_sync_api_also_works_under_a_running_loop() -> None:
    from goaicore import Chat
    from goaicore.conversation.providers import OfflineProvider

    # blocks this loop while it runs, but completes
    assert Chat(OfflineProvider()).chat(user="inside") == "[offline] You said: inside"
