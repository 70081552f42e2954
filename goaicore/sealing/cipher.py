"""Seal a record's bytes under its conversation's data key, and open them again.

A seal is bound to where it belongs (the conversation and the record's own id): one
copied into another record, or altered by a single bit, does not open.
"""

from __future__ import annotations

from goaicore.errors import InputError
from goaicore.sealing.aead import bound_to, decrypt, encrypt
from goaicore.sealing.keys import DataKey

_LABEL = b"goaicore record v1"


class SealBroken(InputError):
    """A seal that does not open under its data key: altered, or not this record's."""


def seal(plain: bytes, key: DataKey, conversation_id: str, record_id: str) -> bytes:
    """``plain`` sealed under ``key`` for the record ``record_id`` of ``conversation_id``."""
    return encrypt(key.material, plain, bound_to(_LABEL, conversation_id, record_id))


def open_seal(sealed: bytes, key: DataKey, conversation_id: str, record_id: str) -> bytes:
    """The bytes inside ``sealed``; :class:`SealBroken` if it is not this record's."""
    plain = decrypt(key.material, sealed, bound_to(_LABEL, conversation_id, record_id))
    if plain is None:
        raise SealBroken(
            f"the sealed record {record_id[:80]!r} of conversation {conversation_id[:80]!r} "
            f"does not open under data key {key.key_id!r}: altered, or copied from another "
            "record"
        )
    return plain
