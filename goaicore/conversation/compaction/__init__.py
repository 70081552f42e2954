"""Compaction: bound what a long conversation costs without ever breaking it.

A ``TriggeredCompactor`` pairs a trigger (when) with a strategy (how) and plugs into
``Chat(compactor=...)``. Every compaction is a ``CompactionRecord``; the compacted
history is always ``apply_compaction(history, record)``, a pure function the
event-sourced fold calls to replay ``CompactionApplied`` events.
"""

from goaicore.conversation.compaction.exchanges import (
    Span,
    tool_runs,
    tool_steps,
    units,
    user_positions,
)
from goaicore.conversation.compaction.openai_tokens import OpenAITokenCounter
from goaicore.conversation.compaction.protocol import CompactionReason, CompactionRequest, Compactor
from goaicore.conversation.compaction.record import (
    CompactionMismatchError,
    CompactionOutcome,
    CompactionRecord,
    Replacement,
    apply_compaction,
    diff_record,
    replay_compaction,
)
from goaicore.conversation.compaction.strategies import (
    Composite,
    KeepLastExchanges,
    Plan,
    Strategy,
    TokenBudget,
    ToolExchangeSummary,
    run_plan,
)
from goaicore.conversation.compaction.summarize import (
    SUMMARY_PREFIX,
    Summarize,
    is_summary,
    transcript,
)
from goaicore.conversation.compaction.tokens import DEFAULT_COUNTER, HeuristicCounter, TokenCounter
from goaicore.conversation.compaction.triggered import TriggeredCompactor
from goaicore.conversation.compaction.triggers import (
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
from goaicore.conversation.compaction.wire import from_compaction_applied, to_compaction_applied

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
