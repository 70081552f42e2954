"""goaicore: an event-sourced conversation store for LLM chat.

The conversation library (``Chat``, tools, state, providers) imports neither
Kafka, Faust nor psycopg, so it can be used on its own.
"""

from typing import TYPE_CHECKING

from goaicore.conversation.chat import (
    Chat,
    ChatError,
    ChatResult,
    ContentFilteredError,
    ContextLengthError,
    FinishReasonError,
    InvalidHistoryError,
    ProviderError,
    ReplyTruncatedError,
    StreamItem,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolLoopLimitError,
    TurnResult,
    UnknownFinishReasonError,
)
from goaicore.conversation.compaction import (
    AllOf,
    AnyOf,
    CompactionRecord,
    Composite,
    EstimatedTokens,
    HeuristicCounter,
    KeepLastExchanges,
    MessageCount,
    OpenAITokenCounter,
    Replacement,
    ReportedPromptTokens,
    StateBytes,
    Summarize,
    TokenBudget,
    TokenCounter,
    ToolExchangeSummary,
    TriggeredCompactor,
    apply_compaction,
)
from goaicore.conversation.messages import Message, ToolCall
from goaicore.conversation.providers import (
    AnthropicProvider,
    OfflineProvider,
    OpenAIProvider,
    ResponsesProvider,
)
from goaicore.conversation.tools import Tool, tool
from goaicore.conversation.validation import validate_history
from goaicore.errors import BrokerError, ConfigError, DatabaseError, GoaicoreError, InputError
from goaicore.records import (
    ChatReply,
    ChatRequest,
    ConversationEvent,
    ConversationSnapshot,
    ReplyStatus,
    new_chat_request,
    new_event,
)
from goaicore.records.avro import (
    DecodeError,
    EncodeError,
    decode,
    decode_chat_reply,
    decode_chat_request,
    decode_event,
    decode_snapshot,
    encode,
    encode_chat_reply,
    encode_chat_request,
    encode_event,
    encode_snapshot,
)
from goaicore.records.types import Usage
from goaicore.settings import Settings

__version__ = "0.1.0"

if TYPE_CHECKING:
    from goaicore.clients import (
        AsyncChatClient,
        AsyncEventPublisher,
        AsyncHistoryReader,
        AsyncReplySubscriber,
        ChatClient,
        DeadLetter,
        EventPublisher,
        HistoryReader,
        InvalidInputError,
        NotAcknowledged,
        ReplySubscriber,
        ReplyTimeout,
        TopicPosition,
    )
    from goaicore.store.history_operations import HistoryOperations

# The Kafka clients load on first use, so importing the library never loads Kafka.
_CLIENTS = frozenset(
    {
        "AsyncChatClient",
        "AsyncEventPublisher",
        "AsyncHistoryReader",
        "AsyncReplySubscriber",
        "ChatClient",
        "DeadLetter",
        "EventPublisher",
        "HistoryOperations",
        "HistoryReader",
        "InvalidInputError",
        "NotAcknowledged",
        "ReplySubscriber",
        "ReplyTimeout",
        "TopicPosition",
    }
)


def __getattr__(name: str) -> object:
    # The stores load on first use too: the one over Kafka brings its clients.
    if name == "ConversationStore":
        from goaicore.store.port import ConversationStore

        return ConversationStore
    if name == "InMemoryConversationStore":
        from goaicore.store.memory import InMemoryConversationStore

        return InMemoryConversationStore
    if name == "KafkaConversationStore":
        from goaicore.store.kafka import KafkaConversationStore

        return KafkaConversationStore
    if name == "HistoryOperations":
        from goaicore.store.history_operations import HistoryOperations

        return HistoryOperations
    if name in _CLIENTS:
        from goaicore import clients

        return getattr(clients, name)
    raise AttributeError(f"module 'goaicore' has no attribute {name!r}")


__all__ = [  # noqa: RUF022 - grouped: the library, then the Kafka clients
    "ConversationStore",
    "InMemoryConversationStore",
    "KafkaConversationStore",
    "AsyncChatClient",
    "AsyncEventPublisher",
    "AsyncHistoryReader",
    "AsyncReplySubscriber",
    "ChatClient",
    "DeadLetter",
    "EventPublisher",
    "HistoryOperations",
    "HistoryReader",
    "InvalidInputError",
    "NotAcknowledged",
    "ReplySubscriber",
    "ReplyTimeout",
    "TopicPosition",
    "AllOf",
    "AnyOf",
    "CompactionRecord",
    "Composite",
    "EstimatedTokens",
    "HeuristicCounter",
    "KeepLastExchanges",
    "MessageCount",
    "OpenAITokenCounter",
    "Replacement",
    "ReportedPromptTokens",
    "StateBytes",
    "Summarize",
    "TokenBudget",
    "TokenCounter",
    "ToolExchangeSummary",
    "TriggeredCompactor",
    "apply_compaction",
    "Chat",
    "ChatError",
    "ChatReply",
    "ChatRequest",
    "ChatResult",
    "BrokerError",
    "ConfigError",
    "DatabaseError",
    "GoaicoreError",
    "InputError",
    "ContentFilteredError",
    "ContextLengthError",
    "ConversationEvent",
    "ConversationSnapshot",
    "DecodeError",
    "EncodeError",
    "FinishReasonError",
    "InvalidHistoryError",
    "Message",
    "ProviderError",
    "ReplyStatus",
    "ReplyTruncatedError",
    "Settings",
    "StreamItem",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "OfflineProvider",
    "OpenAIProvider",
    "ResponsesProvider",
    "AnthropicProvider",
    "Tool",
    "ToolCall",
    "ToolLoopLimitError",
    "TurnResult",
    "UnknownFinishReasonError",
    "Usage",
    "__version__",
    "decode",
    "decode_chat_reply",
    "decode_chat_request",
    "decode_event",
    "decode_snapshot",
    "encode",
    "encode_chat_reply",
    "encode_chat_request",
    "encode_event",
    "encode_snapshot",
    "new_chat_request",
    "new_event",
    "tool",
    "validate_history",
]
