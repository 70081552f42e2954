"""The key hierarchy: master keys from configuration wrap per-conversation data keys."""

from __future__ import annotations

import base64
import dataclasses
import re

import pytest

from goaicore.sealing.keys import (
    DataKey,
    KeyUnusable,
    MasterKey,
    MasterKeys,
    rewrap,
    unwrap,
    wrap,
)

SECRET = bytes(range(32))
TEXT = base64.b64encode(SECRET).decode()


def test_a_data_key_wrapped_for_a_conversation_opens_for_it_alone() -> None:
    masters = MasterKeys.parse(f"k1:{TEXT}")
    key = DataKey.generate()
    wrapped = wrap(masters, "player-7", key)
    assert (wrapped.key_id, wrapped.master_key_id) == (key.key_id, "k1")
    assert key.material not in wrapped.wrapped
    assert unwrap(masters, wrapped) == key
    moved = dataclasses.replace(wrapped, conversation_id="player-8")
    with pytest.raises(KeyUnusable, match="wrapped for another conversation"):
        unwrap(masters, moved)
    altered = bytes([wrapped.wrapped[0] ^ 1]) + wrapped.wrapped[1:]
    with pytest.raises(KeyUnusable, match="altered"):
        unwrap(masters, dataclasses.replace(wrapped, wrapped=altered))


def test_rotation_wraps_again_under_the_new_master_key_and_the_old_one_can_then_go() -> None:
    old = MasterKeys.generate("2025")
    key = DataKey.generate()
    wrapped = wrap(old, "c", key)
    both = MasterKeys((MasterKey("2026", bytes(32)), *old))  # the new key first
    assert unwrap(both, wrapped) == key
    moved = rewrap(both, wrapped)
    assert moved.master_key_id == "2026"
    assert rewrap(both, moved) is moved
    new_only = MasterKeys(both.keys[:1])
    assert unwrap(new_only, moved) == key
    with pytest.raises(KeyUnusable, match="master key '2025', which is not among"):
        unwrap(new_only, wrapped)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "no master key given"),
        (TEXT, "master key 1: expected id:base64"),
        (f"k1:{TEXT[:-4]}", "master key 'k1': 32 bytes expected"),
        ("k1:not base64!", "master key 1 ('k1'): not base64"),
        (f"k 1:{TEXT}", "use 1 to 64 letters"),
        (f"k1:{TEXT},k1:{TEXT}", "master key ids repeat"),
    ],
)
def test_a_malformed_master_key_is_named_without_its_material(text: str, error: str) -> None:
    with pytest.raises(KeyUnusable, match=re.escape(error)) as info:
        MasterKeys.parse(text)
    assert TEXT[:20] not in str(info.value)


def test_key_material_never_shows_in_a_repr() -> None:
    masters = MasterKeys.parse(f"k1:{TEXT}, k0:{base64.urlsafe_b64encode(bytes(32)).decode()}")
    assert [k.key_id for k in masters] == ["k1", "k0"]
    key = DataKey(key_id="d1", material=SECRET)
    wrapped = wrap(masters, "c", key)
    for shown in (repr(masters), repr(masters.current), repr(key), repr(wrapped)):
        assert repr(SECRET) not in shown
        assert TEXT not in shown
        assert repr(wrapped.wrapped) not in shown
    assert MasterKeys.parse(masters.to_text()) == masters
