"""AES-256-GCM under a random nonce, bound to what it seals: the one primitive that both
wraps data keys (``keys``) and seals records (``cipher``)."""

from __future__ import annotations

import os
from typing import Any

from goaicore.extras import needs

NONCE_BYTES = 12  # AES-GCM's standard nonce, random per encryption
OVERHEAD = NONCE_BYTES + 16  # the nonce in front, the tag behind


def bound_to(label: bytes, conversation_id: str, item_id: str) -> bytes:
    """The associated data tying a seal to one item of one conversation: a seal moved
    to another item (or another conversation) does not open."""
    return label + b"\x00" + conversation_id.encode() + b"\x00" + item_id.encode()


def encrypt(material: bytes, plain: bytes, context: bytes) -> bytes:
    """``plain`` sealed under the key ``material``: nonce, ciphertext and tag."""
    nonce = os.urandom(NONCE_BYTES)
    sealed: bytes = _cipher(material).encrypt(nonce, plain, context)
    return nonce + sealed


def decrypt(material: bytes, sealed: bytes, context: bytes) -> bytes | None:
    """What ``sealed`` holds, or None when it does not open (altered, another key, or
    another context); the caller says which item failed."""
    with needs("sealing"):
        from cryptography.exceptions import InvalidTag
    try:
        plain: bytes = _cipher(material).decrypt(
            sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], context
        )
    except InvalidTag:
        return None
    return plain


def _cipher(material: bytes) -> Any:
    """AES-GCM under ``material``; ``cryptography`` (the ``sealing`` extra) is imported
    only here, so reading records that are not sealed never needs it."""
    with needs("sealing"):
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    return AESGCM(material)
