"""Compaction: bound what a long conversation costs without ever breaking it.

A ``TriggeredCompactor`` pairs a trigger (when) with a strategy (how) and plugs into
``Chat(compactor=...)``. Every compaction is a ``CompactionRecord``; the compacted
history is always ``apply_compaction(history, record)``, a pure function the
event-sourced fold calls to replay ``CompactionApplied`` events.
"""

from goaicore.compaction.exchanges import Span, tool_runs, tool_steps, units, user_positions
from goaicore.compaction.openai_tokens import OpenAITokenCounter
from goaicore.compaction.policy import TriggeredCompactor
from goaicore.compaction.record import (
    CompactionMismatchError,
    CompactionOutcome,
    CompactionRecord,
    Replacement,
    apply_compaction,
    diff_record,
    replay_compaction,
)
from goaicore.compaction.strategies import (
    Composite,
    KeepLastExchanges,
    Plan,
    Strategy,
    TokenBudget,
    ToolExchangeSummary,
    run_plan,
)
from goaicore.compaction.summarize import SUMMARY_PREFIX, Summarize, is_summary, transcript
from goaicore.compaction.tokens import DEFAULT_COUNTER, HeuristicCounter, TokenCounter
from goaicore.compaction.triggers import (
    AllOf,
    Always,
    AnyOf,
    EstimatedTokens,
    MessageCount,
    ReportedPromptTokens,
    StateBytes,
    Trigger,
    TriggerContext,
)
from goaicore.compaction.wire import from_compaction_applied, to_compaction_applied
from goaicore.compactor import CompactionReason, CompactionRequest, Compactor

__all__ = [
    "DEFAULT_COUNTER",
    "SUMMARY_PREFIX",
    "AllOf",
    "Always",
    "AnyOf",
    "CompactionMismatchError",
    "CompactionOutcome",
    "CompactionReason",
    "CompactionRecord",
    "CompactionRequest",
    "Compactor",
    "Composite",
    "EstimatedTokens",
    "HeuristicCounter",
    "KeepLastExchanges",
    "MessageCount",
    "OpenAITokenCounter",
    "Plan",
    "Replacement",
    "ReportedPromptTokens",
    "Span",
    "StateBytes",
    "Strategy",
    "Summarize",
    "TokenBudget",
    "TokenCounter",
    "ToolExchangeSummary",
    "Trigger",
    "TriggerContext",
    "TriggeredCompactor",
    "apply_compaction",
    "diff_record",
    "from_compaction_applied",
    "is_summary",
    "replay_compaction",
    "run_plan",
    "to_compaction_applied",
    "tool_runs",
    "tool_steps",
    "transcript",
    "units",
    "user_positions",
]
