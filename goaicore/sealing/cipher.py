"""Seal bytes under a conversation's data key, and open them again.

AES-256-GCM under a random nonce. A seal is bound to where it belongs (the
conversation and the record's own id): one copied into another record, or altered
by a single bit, does not open.
"""

from __future__ import annotations

import os

from goaicore.errors import InputError
from goaicore.extras import needs
from goaicore.sealing.keys import NONCE_BYTES, DataKey

with needs("sealing"):
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

_CONTEXT = b"goaicore record v1\x00"
OVERHEAD = NONCE_BYTES + 16  # the nonce in front, the tag behind


class SealBroken(InputError):
    """A seal that does not open under its data key: altered, or not this record's."""


def _context(conversation_id: str, record_id: str) -> bytes:
    return _CONTEXT + conversation_id.encode() + b"\x00" + record_id.encode()


def seal(plain: bytes, key: DataKey, conversation_id: str, record_id: str) -> bytes:
    """``plain`` sealed under ``key`` for the record ``record_id`` of ``conversation_id``."""
    nonce = os.urandom(NONCE_BYTES)
    return nonce + AESGCM(key.material).encrypt(nonce, plain, _context(conversation_id, record_id))


def open_seal(sealed: bytes, key: DataKey, conversation_id: str, record_id: str) -> bytes:
    """The bytes inside ``sealed``; :class:`SealBroken` if it is not this record's."""
    nonce, body = sealed[:NONCE_BYTES], sealed[NONCE_BYTES:]
    try:
        return AESGCM(key.material).decrypt(nonce, body, _context(conversation_id, record_id))
    except InvalidTag:
        raise SealBroken(
            f"the sealed record {record_id[:80]!r} of conversation {conversation_id[:80]!r} "
            f"does not open under data key {key.key_id!r}: altered, or copied from another "
            "record"
        ) from None
