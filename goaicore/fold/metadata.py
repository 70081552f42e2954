"""A conversation's metadata (title, owner, tags, attributes), set by MetadataSet events.

The limits are part of the fold's semantics, like the size policy's: a MetadataSet
that would break one is an anomaly and changes nothing, so every snapshot's metadata
stays small beside its history. Clients check the same limits first, to refuse such
a change with a clear error before it reaches the log.
"""

from __future__ import annotations

from collections.abc import Mapping

from goaicore.fold.evolve import SnapshotChanges, evolve
from goaicore.fold.size import metadata_bytes
from goaicore.records import ConversationSnapshot, MetadataSet

MAX_TITLE_CHARS = 200
MAX_OWNER_CHARS = 200
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_ATTRIBUTES = 32
MAX_ATTRIBUTE_KEY_CHARS = 64
MAX_ATTRIBUTE_VALUE_CHARS = 1024


METADATA_SHARE = 8
"""The metadata takes at most 1/8 of a snapshot's byte bound (as the latest summary)."""


def metadata_problem(
    snapshot: ConversationSnapshot | None, change: MetadataSet, max_bytes: int | None
) -> str | None:
    """Why ``change`` cannot be applied to ``snapshot`` (None: a new conversation) under a
    snapshot bound of ``max_bytes`` (None: fold version 1, no bound), or None."""
    if change.title is not None and len(change.title) > MAX_TITLE_CHARS:
        return f"a title of {len(change.title)} characters (at most {MAX_TITLE_CHARS})"
    if change.owner is not None and len(change.owner) > MAX_OWNER_CHARS:
        return f"an owner of {len(change.owner)} characters (at most {MAX_OWNER_CHARS})"
    if change.tags is not None:
        tags = set(change.tags)
        if len(tags) > MAX_TAGS:
            return f"{len(tags)} tags (at most {MAX_TAGS})"
        for tag in tags:
            if not tag or len(tag) > MAX_TAG_CHARS:
                return f"a tag of {len(tag)} characters (1 to {MAX_TAG_CHARS})"
    for key, value in change.attributes.items():
        if not key or len(key) > MAX_ATTRIBUTE_KEY_CHARS:
            return f"an attribute name of {len(key)} characters (1 to {MAX_ATTRIBUTE_KEY_CHARS})"
        if value is not None and len(value) > MAX_ATTRIBUTE_VALUE_CHARS:
            return (
                f"attribute {key!r} of {len(value)} characters "
                f"(at most {MAX_ATTRIBUTE_VALUE_CHARS})"
            )
    base = snapshot or ConversationSnapshot(conversation_id="")
    after = evolve(base, **metadata_changes(base, change))
    if len(after.attributes) > MAX_ATTRIBUTES:
        return f"{len(after.attributes)} attributes (at most {MAX_ATTRIBUTES})"
    if max_bytes is not None and metadata_bytes(after) > max_bytes // METADATA_SHARE:
        return (
            f"metadata of {metadata_bytes(after):,} encoded bytes, over 1/{METADATA_SHARE} "
            f"of the snapshot bound ({max_bytes:,} bytes)"
        )
    return None


def metadata_changes(snapshot: ConversationSnapshot, change: MetadataSet) -> SnapshotChanges:
    """The fields ``change`` sets on ``snapshot`` (checked first by :func:`metadata_problem`)."""
    title, owner, tags = snapshot.title, snapshot.owner, snapshot.tags
    if change.title is not None:
        title = change.title or None
    if change.owner is not None:
        owner = change.owner or None
    if change.tags is not None:
        tags = tuple(sorted(set(change.tags)))
    attributes = _patched(snapshot.attributes, change) if change.attributes else None
    return SnapshotChanges(
        title=title,
        owner=owner,
        tags=tags,
        attributes=snapshot.attributes if attributes is None else attributes,
    )


def _patched(attributes: Mapping[str, str], change: MetadataSet) -> dict[str, str]:
    out = dict(attributes)
    for key, value in change.attributes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return dict(sorted(out.items()))
