"""The worker's one :class:`HistoryOperations`, for the routes that append history events.

The operations read the conversation from the log with kafka-python: they run in a
thread, one at a time per worker (they are rare, and each reads a partition). Their
refusals become the API's errors: no events is a 404, a state that refuses the
operation a 409, bad input a 400.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from goaicore.clients.history_ops import (
    ConversationNotFound,
    HistoryOperations,
    OperationPending,
    OperationRefused,
)
from goaicore.errors import InputError
from goaicore_store.http.errors import ApiError

if TYPE_CHECKING:
    from goaicore_store.topology import StoreApp

T = TypeVar("T")


class OperationRunner:
    """One HistoryOperations per worker, opened on first use, used by one call at a time,
    closed before the worker shuts down."""

    def __init__(self, store: StoreApp) -> None:
        self.store = store
        self._ops: HistoryOperations | None = None
        self._lock = threading.Lock()

        async def close(sender: Any, *args: Any, **kwargs: Any) -> None:
            await asyncio.to_thread(self.close)

        store.app.on_before_shutdown.connect(close)  # type: ignore[arg-type]

    async def run(self, operation: Callable[[HistoryOperations], T]) -> T:
        return await asyncio.to_thread(self._run, operation)

    def _run(self, operation: Callable[[HistoryOperations], T]) -> T:
        with self._lock:
            if self._ops is None:
                self._ops = HistoryOperations(self.store.settings)
            try:
                return operation(self._ops)
            except ConversationNotFound as err:
                raise ApiError(404, str(err)) from None
            except OperationRefused as err:
                raise ApiError(409, str(err)) from None
            except OperationPending as err:  # appended; it takes effect once sealed
                raise ApiError(504, str(err)) from None
            except InputError as err:
                raise ApiError(400, str(err)) from None

    def close(self) -> None:
        with self._lock:
            if self._ops is not None:
                self._ops.close()
                self._ops = None
