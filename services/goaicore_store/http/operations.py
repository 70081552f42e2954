"""The store's refusals as the API's errors: no events is a 404, a state that refuses the
operation a 409, an operation appended but not yet sealed (or a write not yet folded)
a 504, bad input a 400."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from goaicore.errors import InputError
from goaicore.store.errors import (
    ConversationNotFound,
    OperationPending,
    OperationRefused,
    WriteNotApplied,
)
from goaicore_store.http.errors import ApiError


@contextmanager
def store_errors() -> Iterator[None]:
    """Raise the store's errors inside as :class:`ApiError` answers."""
    try:
        yield
    except ConversationNotFound as err:
        raise ApiError(404, str(err)) from None
    except OperationRefused as err:
        raise ApiError(409, str(err)) from None
    except OperationPending as err:  # appended; it takes effect once sealed
        raise ApiError(504, str(err)) from None
    except WriteNotApplied as err:  # a write the store waited for is not folded yet
        raise ApiError(504, str(err)) from None
    except InputError as err:
        raise ApiError(400, str(err)) from None
