"""Master keys and per-conversation data keys: crypto-shredding's key hierarchy.

Each conversation's content is sealed under a data key of its own (AES-256-GCM);
a data key is stored only wrapped by a master key (AES-256-GCM too), which comes
from configuration and never reaches Kafka. Erasing a conversation destroys its
wrapped data key, and with it every sealed copy of its content. Master keys rotate
by wrapping data keys again under the new one (:func:`rewrap`); the wrapped form
names the master key that opens it.

Key material never appears in a repr, an error or a log line. The text of the keys
(GOAICORE_MASTER_KEYS) is checked by ``goaicore.settings.sealing``, where settings
are read; the keys here are built from that check.
"""

from __future__ import annotations

import base64
import dataclasses
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from goaicore.records import ConversationKey, utc_now
from goaicore.sealing.aead import bound_to, decrypt, encrypt
from goaicore.settings.sealing import KEY_BYTES as KEY_BYTES
from goaicore.settings.sealing import KeyUnusable as KeyUnusable
from goaicore.settings.sealing import check_master_key, check_master_key_ids, master_key_entries

_WRAP_LABEL = b"goaicore data key v1"


@dataclass(frozen=True)
class MasterKey:
    """One master key: an id (kept with every key it wraps) and its 32 bytes."""

    key_id: str
    material: bytes = field(repr=False)

    def __post_init__(self) -> None:
        check_master_key(self.key_id, self.material)


@dataclass(frozen=True)
class MasterKeys:
    """The master keys a process holds: the first wraps new data keys, all of them open."""

    keys: tuple[MasterKey, ...]

    def __post_init__(self) -> None:
        check_master_key_ids([key.key_id for key in self.keys])

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
        return cls(tuple(MasterKey(key_id, key) for key_id, key in master_key_entries(text)))

    @classmethod
    def generate(cls, key_id: str = "k1") -> MasterKeys:
        """A fresh random master key (the local stack's, kept in its data folder)."""
        return cls((MasterKey(key_id, os.urandom(KEY_BYTES)),))

    def to_text(self) -> str:
        """The form :meth:`parse` reads: only for writing the local stack's key file."""
        return ",".join(f"{k.key_id}:{base64.b64encode(k.material).decode()}" for k in self.keys)


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
