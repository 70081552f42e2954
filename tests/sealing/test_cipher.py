"""Sealed bytes open under their data key, for their own record only."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goaicore.sealing.aead import OVERHEAD
from goaicore.sealing.cipher import SealBroken, open_seal, seal
from goaicore.sealing.keys import DataKey

KEY = DataKey.generate()


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=4096), st.text(max_size=40), st.text(max_size=40))
def test_any_bytes_seal_and_open_to_themselves(
    plain: bytes, conversation: str, record: str
) -> None:
    sealed = seal(plain, KEY, conversation, record)
    assert len(sealed) == len(plain) + OVERHEAD
    assert open_seal(sealed, KEY, conversation, record) == plain


def test_a_seal_opens_only_under_its_key_for_its_own_record() -> None:
    plain = b"meet me at the tower at dawn"
    sealed = seal(plain, KEY, "conv", "e1")
    assert b"tower" not in sealed
    assert seal(plain, KEY, "conv", "e1") != sealed  # a fresh nonce each time
    for key, conversation, record in [
        (DataKey.generate(), "conv", "e1"),
        (KEY, "other", "e1"),
        (KEY, "conv", "e2"),
    ]:
        with pytest.raises(SealBroken, match="does not open"):
            open_seal(sealed, key, conversation, record)
    flipped = sealed[:-1] + bytes([sealed[-1] ^ 0x80])
    with pytest.raises(SealBroken, match="altered, or copied"):
        open_seal(flipped, KEY, "conv", "e1")
