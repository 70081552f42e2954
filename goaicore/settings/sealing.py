"""Sealing's settings: the master keys, whether publishers write to intake, the erasure window.

The master keys' text is checked here, when settings are read, so a bad entry stops
a process at start rather than at its first seal; ``goaicore.sealing.keys`` builds
its keys from the same check. No error names a key's material.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence

from goaicore.errors import ConfigError
from goaicore.settings.declare import Setting, seconds, switch

KEY_BYTES = 32  # AES-256
_KEY_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


class KeyUnusable(ConfigError):
    """A key that cannot be used: malformed, not held, or not opening what it should."""


def check_master_key(key_id: str, material: bytes) -> None:
    """Refuse a master key whose id or length is wrong."""
    if not _KEY_ID.fullmatch(key_id):
        raise KeyUnusable(
            f"master key id {key_id[:64]!r}: use 1 to 64 letters, digits, '.', '_' or '-'"
        )
    if len(material) != KEY_BYTES:
        raise KeyUnusable(f"master key {key_id!r}: {KEY_BYTES} bytes expected")


def check_master_key_ids(ids: Sequence[str]) -> None:
    """Refuse no keys at all, or two keys of one id."""
    if not ids:
        raise KeyUnusable("no master key given")
    if len(set(ids)) != len(ids):
        raise KeyUnusable(f"master key ids repeat: {sorted(ids)}")


def master_key_entries(text: str) -> tuple[tuple[str, bytes], ...]:
    """The (id, material) of each key of ``id:base64,id:base64`` (the current one first),
    as in GOAICORE_MASTER_KEYS, checked. An error names the entry, never its key."""
    entries = []
    for number, entry in enumerate(filter(None, (e.strip() for e in text.split(","))), 1):
        key_id, colon, encoded = (part.strip() for part in entry.partition(":"))
        if not colon:
            raise KeyUnusable(f"master key {number}: expected id:base64")
        material = _base64(encoded, key_id, number)
        check_master_key(key_id, material)
        entries.append((key_id, material))
    check_master_key_ids([key_id for key_id, _ in entries])
    return tuple(entries)


def _base64(encoded: str, key_id: str, number: int) -> bytes:
    try:
        return base64.b64decode(encoded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        raise KeyUnusable(f"master key {number} ({key_id[:64]!r}): not base64") from None


def parse_master_keys(name: str, raw: str) -> str | None:
    """The keys' text, checked now (a bad entry fails at start, not at the first seal);
    the error names the entry, never a key."""
    if not raw.strip():
        return None
    master_key_entries(raw)
    return raw


SEALING: tuple[Setting, ...] = (
    Setting(
        "master_keys",
        "GOAICORE_MASTER_KEYS",
        "unset: content is written in the clear",
        "Master keys that wrap each conversation's data key, `id:base64` (32 bytes each), "
        "comma-separated, the current one first; never shown or logged. Set, the worker "
        "seals what it writes to `events` and erasure can make content unreadable. See "
        'docs/operations.md, "Erasure".',
        parse_master_keys,
        secret=True,
    ),
    # None: Settings.intake follows the master keys.
    Setting(
        "intake_override",
        "GOAICORE_INTAKE",
        "`on` when GOAICORE_MASTER_KEYS is set, else `off`",
        "`on`: publishers (EventPublisher, `goaicore publish-event`, history operations) "
        "write to `intake`, and the worker that owns the conversation seals each event into "
        "`events`; set it on every service that publishes to a deployment whose workers "
        "seal (they need no master key). `off`: they write to `events` directly.",
        switch,
    ),
    Setting(
        "erasure_window",
        "GOAICORE_ERASURE_WINDOW",
        "`604800` (7 days)",
        "Seconds content may stay readable after an erasure: the retention of `requests`, "
        "`replies`, `reply-stream` and `dead-letters`, and how long compaction may wait on "
        "`snapshots`, `keys` and the replies table. Applied when topics are created.",
        seconds(1, 10 * 365 * 86400),
        7 * 86400.0,
    ),
)
