"""The compaction benchmark's session, short: every policy bounds what a turn sends."""

from __future__ import annotations

import asyncio

from goaicore.bench.compaction import play, policies, session
from goaicore.conversation.compaction import OpenAITokenCounter


def test_the_scripted_session_mixes_events_questions_and_tools() -> None:
    script = session(28)
    assert sum(len(events) for events, _ in script) >= 10
    assert sum("get_score" in q for _, q in script) >= 5
    assert sum("find_venue" in q for _, q in script) >= 3
    assert script == session(28)  # deterministic


def test_every_policy_sends_less_than_no_compaction() -> None:
    counter = OpenAITokenCounter("gpt-4o")
    runs = {name: asyncio.run(play(c, counter, turns=150)) for name, c in policies().items()}
    baseline = runs.pop("none")
    assert not baseline.compaction_seconds
    assert baseline.per_turn[-1] > 8000  # without compaction, turns keep growing
    for name, run in runs.items():
        assert sum(run.per_turn) < sum(baseline.per_turn), name
        assert run.compaction_seconds, name
        assert run.final_messages < baseline.final_messages, name
    for name in ("token-budget", "summarize", "composite", "keep-last-exchanges"):
        assert max(runs[name].per_turn[-50:]) < 8000, name  # bounded, turn after turn
