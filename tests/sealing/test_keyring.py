"""The key ring: keys unwrapped once, a miss caught up with the topic once, erasure final."""

from __future__ import annotations

import dataclasses

import pytest

from goaicore.records import ConversationKey
from goaicore.sealing.keyring import KeyRing, doomed_by
from goaicore.sealing.keys import DataKey, KeyUnusable, MasterKeys, wrap


def test_a_missing_key_is_looked_for_once_more_then_taken_for_erased() -> None:
    masters = MasterKeys.generate()
    key = DataKey.generate()
    topic: dict[str, ConversationKey] = {}
    stored: dict[str, ConversationKey] = {}
    refreshes: list[str] = []

    def refresh(conversation_id: str) -> None:
        refreshes.append(conversation_id)
        stored.update(topic)

    ring = KeyRing(masters, stored.get, refresh)
    topic["c"] = wrap(masters, "c", key)  # written after the ring last read the topic
    assert ring.lookup("c", key.key_id) == key
    assert ring.lookup("c", key.key_id) == key
    assert refreshes == ["c"]
    stored.pop("c")  # erased: a tombstone
    topic.pop("c")
    ring = KeyRing(masters, stored.get, refresh)
    assert ring.lookup("c", key.key_id) is None
    assert ring.lookup("c", key.key_id) is None
    assert refreshes == ["c", "c"]  # a key once missed after a refresh never comes back


def test_a_key_under_a_master_key_not_held_is_a_configuration_fault_not_an_erasure() -> None:
    key = DataKey.generate()
    stored = {"c": wrap(MasterKeys.generate("old"), "c", key)}
    with pytest.raises(KeyUnusable, match="not among the master keys held"):
        KeyRing(MasterKeys.generate("new"), stored.get).lookup("c", key.key_id)


def test_an_erasure_dooms_only_the_keys_made_before_it() -> None:
    key = wrap(MasterKeys.generate(), "c", DataKey.generate())
    assert doomed_by(key, 10)
    after = dataclasses.replace(key, after_erasure_offset=10)
    assert not doomed_by(after, 10)
    assert doomed_by(after, 11)
    assert not doomed_by(None, 10)
