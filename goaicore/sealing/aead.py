"""AES-256-GCM under a random nonce, bound to what it seals: the one primitive that both
wraps data keys (``keys``) and seals records (``cipher``)."""

from __future__ import annotations

import os

from goaicore.extras import needs

with needs("sealing"):
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

NONCE_BYTES = 12  # AES-GCM's standard nonce, random per encryption
OVERHEAD = NONCE_BYTES + 16  # the nonce in front, the tag behind


def bound_to(label: bytes, conversation_id: str, item_id: str) -> bytes:
    """The associated data tying a seal to one item of one conversation: a seal moved
    to another item (or another conversation) does not open."""
    return label + b"\x00" + conversation_id.encode() + b"\x00" + item_id.encode()


def encrypt(material: bytes, plain: bytes, context: bytes) -> bytes:
    """``plain`` sealed under the key ``material``: nonce, ciphertext and tag."""
    nonce = os.urandom(NONCE_BYTES)
    return nonce + AESGCM(material).encrypt(nonce, plain, context)


def decrypt(material: bytes, sealed: bytes, context: bytes) -> bytes | None:
    """What ``sealed`` holds, or None when it does not open (altered, another key, or
    another context); the caller says which item failed."""
    try:
        return AESGCM(material).decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], context)
    except InvalidTag:
        return None
