"""Master keys and per-conversation data keys: crypto-shredding's key hierarchy.

Each conversation's content is sealed under a data key of its own (AES-256-GCM);
a data key is stored only wrapped by a master key (AES-256-GCM too), which comes
from configuration and never reaches Kafka. Erasing a conversation destroys its
wrapped data key, and with it every sealed copy of its content. Master keys rotate
by wrapping data keys again under the new one (:func:`rewrap`); the wrapped form
names the master key that opens it.

Key material never appears in a repr, an error or a log line.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from goaicore.errors import ConfigError
from goaicore.records import ConversationKey, utc_now
from goaicore.sealing.aead import bound_to, decrypt, encrypt

KEY_BYTES = 32  # AES-256
_KEY_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_WRAP_LABEL = b"goaicore data key v1"


class KeyUnusable(ConfigError):
    """A key that cannot be used: malformed, not held, or not opening what it should."""


@dataclass(frozen=True)
class MasterKey:
    """One master key: an id (kept with every key it wraps) and its 32 bytes."""

    key_id: str
    material: bytes = field(repr=False)

    def __post_init__(self) -> None:
        if not _KEY_ID.fullmatch(self.key_id):
            raise KeyUnusable(
                f"master key id {self.key_id[:64]!r}: use 1 to 64 letters, digits, '.', '_' or '-'"
            )
        if len(self.material) != KEY_BYTES:
            raise KeyUnusable(f"master key {self.key_id!r}: {KEY_BYTES} bytes expected")


@dataclass(frozen=True)
class MasterKeys:
    """The master keys a process holds: the first wraps new data keys, all of them open."""

    keys: tuple[MasterKey, ...]

    def __post_init__(self) -> None:
        if not self.keys:
            raise KeyUnusable("no master key given")
        ids = [key.key_id for key in self.keys]
        if len(set(ids)) != len(ids):
            raise KeyUnusable(f"master key ids repeat: {sorted(ids)}")

    @property
    def current(self) -> MasterKey:
        return self.keys[0]

    def by_id(self, key_id: str) -> MasterKey:
        for key in self.keys:
            if key.key_id == key_id:
                return key
        raise KeyUnusable(
            f"a data key is wrapped under master key {key_id[:64]!r}, which is not among "
            f"the master keys held ({', '.join(k.key_id for k in self.keys)})"
        )

    def __iter__(self) -> Iterator[MasterKey]:
        return iter(self.keys)

    @classmethod
    def parse(cls, text: str) -> MasterKeys:
        """Keys from ``id:base64,id:base64`` (the current one first), as in
        GOAICORE_MASTER_KEYS. An error names the entry, never its key."""
        keys = []
        for number, entry in enumerate(filter(None, (e.strip() for e in text.split(","))), 1):
            key_id, colon, encoded = (part.strip() for part in entry.partition(":"))
            if not colon:
                raise KeyUnusable(f"master key {number}: expected id:base64")
            keys.append(MasterKey(key_id, _base64(encoded, key_id, number)))
        return cls(tuple(keys))

    @classmethod
    def generate(cls, key_id: str = "k1") -> MasterKeys:
        """A fresh random master key (the local stack's, kept in its data folder)."""
        return cls((MasterKey(key_id, os.urandom(KEY_BYTES)),))

    def to_text(self) -> str:
        """The form :meth:`parse` reads: only for writing the local stack's key file."""
        return ",".join(f"{k.key_id}:{base64.b64encode(k.material).decode()}" for k in self.keys)


def _base64(encoded: str, key_id: str, number: int) -> bytes:
    try:
        return base64.b64decode(encoded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        raise KeyUnusable(f"master key {number} ({key_id[:64]!r}): not base64") from None


@dataclass(frozen=True)
class DataKey:
    """A conversation's data key, in the clear: held in memory only."""

    key_id: str
    material: bytes = field(repr=False)

    @classmethod
    def generate(cls) -> DataKey:
        return cls(os.urandom(16).hex(), os.urandom(KEY_BYTES))


def wrap(masters: MasterKeys, conversation_id: str, data_key: DataKey) -> ConversationKey:
    """``data_key`` sealed under the current master key, for ``conversation_id`` only."""
    master = masters.current
    context = bound_to(_WRAP_LABEL, conversation_id, data_key.key_id)
    sealed = encrypt(master.material, data_key.material, context)
    return ConversationKey(
        conversation_id=conversation_id,
        key_id=data_key.key_id,
        master_key_id=master.key_id,
        wrapped=sealed,
        created_at=utc_now(),
    )


def unwrap(masters: MasterKeys, wrapped: ConversationKey) -> DataKey:
    """The data key inside ``wrapped``; refused if it was altered or moved to another
    conversation, or its master key is not held."""
    master = masters.by_id(wrapped.master_key_id)
    context = bound_to(_WRAP_LABEL, wrapped.conversation_id, wrapped.key_id)
    material = decrypt(master.material, wrapped.wrapped, context)
    if material is None:
        raise KeyUnusable(
            f"data key {wrapped.key_id[:64]!r} of conversation "
            f"{wrapped.conversation_id[:80]!r} does not open under master key "
            f"{master.key_id!r}: altered, or wrapped for another conversation"
        )
    return DataKey(wrapped.key_id, material)


def rewrap(masters: MasterKeys, wrapped: ConversationKey) -> ConversationKey:
    """``wrapped`` under the current master key (rotation); unchanged if it already is."""
    if wrapped.master_key_id == masters.current.key_id:
        return wrapped
    again = wrap(masters, wrapped.conversation_id, unwrap(masters, wrapped))
    return dataclasses.replace(again, created_at=wrapped.created_at)
