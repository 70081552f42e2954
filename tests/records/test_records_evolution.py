"""Schema evolution: bytes of every release decode as today's records, and each release
reads what the current schema writes except event bodies added after it.

- Golden bytes written by each release (``golden/``) decode with the current reader,
  those of a release's original text too (``v<N>-original``: what ``v<N>`` was before it
  was rewritten in place), and each is what fastavro writes from that release's schema.
- Each release, used as the reader, reads what the current schema writes.
- A synthetic v2 (fields added with defaults, a body branch appended, an enum symbol
  added) reads v1 bytes, and the current reader reads v2 bytes: the rules of
  ``schemas/README.md`` hold for our schemas as they stand.

What Apache Avro's Java reference finds about the schemas themselves is
``test_avro_reference``'s.
"""

from __future__ import annotations

import copy
import dataclasses
import io
import json
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_writer

from goaicore.records import (
    ChatReply,
    ChatRequest,
    ConversationEvent,
    ConversationRewound,
    ConversationSnapshot,
    ReplyChunkKind,
    ReplyStatus,
    UserMessage,
    convert,
)
from goaicore.records.avro import (
    MAGIC,
    Codec,
    Codecs,
    DecodeError,
    SchemaRegistry,
    decode,
    default_codecs,
    encode,
    fingerprint,
    payload_schema,
)
from goaicore.records.avro.codec import read_body
from goaicore.records.avro.schemas import SCHEMA_NAMES, load_current, load_released, schemas_dir
from tests.records.make_golden import golden_path, load_golden
from tests.records.records_samples import (
    CHAT_REPLY_SAMPLES,
    EVENT_SAMPLES,
    REPLY_CHUNK_SAMPLES,
    SAMPLES_BY_SCHEMA,
)

RELEASES = [(name, f.release) for name in SCHEMA_NAMES for f in load_released(name) if f.release]
IDS = [f"{name}-{release}" for name, release in RELEASES]

# Releases rewritten in place after they shipped: the original text of each is kept as a
# release of its own (schemas/README.md), and its golden bytes are the ones committed with
# it, written by it.
ORIGINALS = {
    ("ConversationEvent", "v3-original"),
    ("ConversationSnapshot", "v4-original"),
    ("ConversationKey", "v1-original"),
    ("ChatRequest", "v2-original"),
}


_SCHEMAS_README = (schemas_dir() / "README.md").read_text(encoding="utf-8")


def _without_basis(event: ConversationEvent) -> ConversationEvent:
    assert isinstance(event.body, ConversationRewound)
    return dataclasses.replace(event, body=dataclasses.replace(event.body, basis_event_id=None))


def _never_erased(snapshot: ConversationSnapshot) -> ConversationSnapshot:
    return dataclasses.replace(snapshot, erased_before=None)


# A sample holding a field its release's original text lacked (the rewrite added it)
# reads with that field at its default.
ORIGINAL_LACKS: dict[tuple[str, str, str], Any] = {
    ("ConversationEvent", "v3-original", "rewound"): _without_basis,
    ("ConversationSnapshot", "v4-original", "earlier_bounds"): _never_erased,
}


def _expected(name: str, release: str, sample: str) -> Any:
    record = SAMPLES_BY_SCHEMA[name][sample]
    lacks = ORIGINAL_LACKS.get((name, release, sample))
    return record if lacks is None else lacks(record)


def _released(name: str, release: str) -> Any:
    return next(f for f in load_released(name) if f.release == release)


def test_every_schema_has_a_released_v1() -> None:
    assert {name for name, release in RELEASES if release == "v1"} == set(SCHEMA_NAMES)


def test_the_originals_of_rewritten_releases_are_kept() -> None:
    assert {(n, r) for n, r in RELEASES if r.endswith("-original")} == ORIGINALS
    for name, release in ORIGINALS:
        original = _released(name, release)
        rewritten = _released(name, release.removesuffix("-original"))
        assert fingerprint(original.parsed) != fingerprint(rewritten.parsed)
        # released just before the rewrite, so it comes just before it in release order
        releases = [f.release for f in load_released(name)]
        assert releases.index(original.release) + 1 == releases.index(rewritten.release)
        # schemas/README.md names both, with their fingerprints
        row = f"| `{name}` | `{release}` | `{fingerprint(original.parsed).hex()}` | "
        assert row in _SCHEMAS_README, row
        assert f"| `{fingerprint(rewritten.parsed).hex()}` |" in _SCHEMAS_README


@pytest.mark.parametrize(("name", "release"), RELEASES, ids=IDS)
def test_golden_bytes_of_every_release_decode_with_the_current_reader(
    name: str, release: str
) -> None:
    path = golden_path(name, release)
    assert path.is_file(), f"{path} is missing: run python -m tests.records.make_golden"
    golden = load_golden(name, release)
    samples = SAMPLES_BY_SCHEMA[name]
    # a release holds the samples that existed when it was made; the latest holds all
    assert set(golden) <= set(samples)
    if release == load_released(name)[-1].release:
        assert set(golden) == set(samples)
    released = _released(name, release)
    for sample, data in golden.items():
        assert data[2:10] == fingerprint(released.parsed), sample
        assert payload_schema(data).label == f"{name} {release}", sample
        expected = _expected(name, release, sample)
        assert decode(data) == expected, sample
        assert default_codecs().by_name(name).decode(data) == expected, sample


@pytest.mark.parametrize(("name", "release"), RELEASES, ids=IDS)
def test_golden_bytes_are_what_their_release_writes(name: str, release: str) -> None:
    """Each golden body is fastavro's encoding of its record under that release's schema:
    the bytes are that release's, not the current schema's under another header."""
    released = _released(name, release)
    codec = default_codecs().by_name(name)
    for sample, data in load_golden(name, release).items():
        datum = codec.to_datum(_expected(name, release, sample))
        out = io.BytesIO()
        schemaless_writer(out, released.parsed, datum)
        assert data[10:] == out.getvalue(), sample


@pytest.mark.parametrize(("name", "release"), RELEASES, ids=IDS)
def test_every_release_reads_what_the_current_schema_writes(name: str, release: str) -> None:
    released = _released(name, release)
    current = load_current(name)
    registry = SchemaRegistry(readers={name: released.parsed}, writers={name: []})
    writer = SchemaRegistry(readers={name: current.parsed}, writers={}).current(name)
    known_bodies = _body_names(released.raw)
    for record in SAMPLES_BY_SCHEMA[name].values():
        data = encode(record)
        if isinstance(record, ConversationEvent) and type(record.body).__name__ not in known_bodies:
            # Schema rule 5: a release older than a body branch cannot read it (such a
            # record is a dead letter for it); readers are upgraded before writers.
            with pytest.raises(DecodeError, match="incompatible-schema"):
                read_body(data, writer, registry.reader(name))
            continue
        as_released = read_body(data, writer, registry.reader(name))
        as_current = read_body(data, writer, None)
        expected = _known_part(as_released, as_current)
        for field, (symbols, default) in _enum_fields(released.raw).items():
            if expected[field] not in symbols:
                # Schema rule 6: a symbol added after the release reads as its default.
                expected[field] = default
        assert as_released == expected


def _body_names(raw: dict[str, Any]) -> set[str]:
    """The names of the event body branches a release of the event schema has."""
    body = next((f for f in raw.get("fields", ()) if f["name"] == "body"), None)
    return {branch["name"] for branch in body["type"]} if body else set()


def _enum_fields(raw: dict[str, Any]) -> dict[str, tuple[list[str], str]]:
    """A release's top-level enum fields: name -> (the symbols it has, its default)."""
    return {
        f["name"]: (f["type"]["symbols"], f["type"]["default"])
        for f in raw.get("fields", ())
        if isinstance(f["type"], dict) and f["type"].get("type") == "enum"
    }


def _known_part(known: Any, value: Any) -> Any:
    """``value`` restricted, at every depth, to the record fields ``known`` has."""
    if isinstance(known, dict) and isinstance(value, dict):
        return {key: _known_part(known[key], value[key]) for key in known if key in value}
    if isinstance(known, tuple) and isinstance(value, tuple) and len(known) == len(value):
        return tuple(_known_part(k, v) for k, v in zip(known, value, strict=True))
    if isinstance(known, list) and isinstance(value, list) and len(known) == len(value):
        return [_known_part(k, v) for k, v in zip(known, value, strict=True)]
    return value


# -- a synthetic next version -----------------------------------------------------------


def _raw(name: str) -> dict[str, Any]:
    raw: dict[str, Any] = copy.deepcopy(load_current(name).raw)
    return raw


def _event_v2() -> dict[str, Any]:
    """ConversationEvent as a careful v2 would change it."""
    raw = _raw("ConversationEvent")
    raw["fields"].insert(
        4, {"name": "priority", "type": "int", "default": 0, "doc": "Added in v2."}
    )
    body = next(f for f in raw["fields"] if f["name"] == "body")
    user_message = body["type"][0]
    assert user_message["name"] == "UserMessage"
    user_message["fields"].append(
        {"name": "language", "type": ["null", "string"], "default": None, "doc": "Added in v2."}
    )
    body["type"].append(
        {
            "type": "record",
            "name": "Reaction",
            "doc": "Added in v2.",
            "fields": [{"name": "emoji", "type": "string", "doc": "Added in v2."}],
        }
    )
    return raw


def _reply_v2() -> dict[str, Any]:
    raw = _raw("ChatReply")
    status = next(f for f in raw["fields"] if f["name"] == "status")
    status["type"]["symbols"].append("deferred")
    raw["fields"].append({"name": "model", "type": ["null", "string"], "default": None})
    return raw


def _write(raw_schema: dict[str, Any], datum: dict[str, Any]) -> bytes:
    parsed = parse_schema(raw_schema)
    out = io.BytesIO()
    out.write(MAGIC + fingerprint(parsed))
    schemaless_writer(out, parsed, datum)
    return out.getvalue()


def test_a_v2_reader_reads_v1_bytes_filling_defaults() -> None:
    name = "ConversationEvent"
    v1 = next(f for f in load_released(name) if f.version == 1)
    registry = SchemaRegistry(
        readers={name: parse_schema(_event_v2())}, writers={name: [("v1", v1.parsed)]}
    )
    codec = Codec(
        name,
        type(EVENT_SAMPLES["user_message"]),
        registry,
        convert.event_to_avro,
        convert.event_from_avro,
    )
    for sample, data in load_golden(name, "v1").items():
        datum = codec.decode_datum(data)
        assert datum["priority"] == 0
        if datum["body"][0] == "goaicore.UserMessage":
            assert datum["body"][1]["language"] is None
        # Fields the records do not know yet are ignored: the typed record is unchanged.
        assert codec.decode(data) == EVENT_SAMPLES[sample]
    assert codec.writer.version is None  # v2 is not released: labelled as such


def _current_registry_knowing(name: str, v2: dict[str, Any]) -> Codecs:
    """The current readers, plus a v2 writer as if a newer producer had released it."""
    files = {n: load_current(n) for n in SCHEMA_NAMES}
    writers: dict[str, list[tuple[str, Any]]] = {
        n: [(f.release, f.parsed) for f in load_released(n) if f.release] for n in SCHEMA_NAMES
    }
    writers[name].append(("v2", parse_schema(v2)))
    return Codecs.for_registry(
        SchemaRegistry(readers={n: f.parsed for n, f in files.items()}, writers=writers)
    )


def test_the_current_reader_reads_v2_bytes_ignoring_new_fields() -> None:
    codecs = _current_registry_knowing("ConversationEvent", _event_v2())
    expected = EVENT_SAMPLES["user_message"]
    datum = convert.event_to_avro(expected)
    datum["priority"] = 7
    datum["body"] = ("goaicore.UserMessage", {**datum["body"][1], "language": "en"})
    assert codecs.event.decode(_write(_event_v2(), datum)) == expected


def test_an_unknown_enum_symbol_reads_as_the_enum_default() -> None:
    codecs = _current_registry_knowing("ChatReply", _reply_v2())
    reply = ChatReply(request_id="r", conversation_id="c", status=ReplyStatus.OK, text="hi")
    datum = convert.chat_reply_to_avro(reply)
    datum.update(status="deferred", model="m")
    decoded = codecs.chat_reply.decode(_write(_reply_v2(), datum))
    assert decoded.status is ReplyStatus.ERROR
    assert decoded.text == "hi"


def _chunk_v2() -> dict[str, Any]:
    raw = _raw("ReplyChunk")
    kind = next(f for f in raw["fields"] if f["name"] == "kind")
    kind["type"]["symbols"].append("thinking")
    raw["fields"].append({"name": "model", "type": ["null", "string"], "default": None})
    return raw


def test_a_chunk_kind_added_later_reads_as_unknown() -> None:
    codecs = _current_registry_knowing("ReplyChunk", _chunk_v2())
    chunk = REPLY_CHUNK_SAMPLES["delta"]
    datum = convert.reply_chunk_to_avro(chunk)
    datum.update(kind="thinking", model="m")
    decoded = codecs.reply_chunk.decode(_write(_chunk_v2(), datum))
    assert decoded.kind is ReplyChunkKind.UNKNOWN
    assert decoded == dataclasses.replace(chunk, kind=ReplyChunkKind.UNKNOWN)


def test_a_body_branch_the_reader_lacks_is_a_typed_incompatible_schema_error() -> None:
    codecs = _current_registry_knowing("ConversationEvent", _event_v2())
    datum = convert.event_to_avro(EVENT_SAMPLES["user_message"])
    datum["priority"] = 0
    datum["body"] = ("goaicore.Reaction", {"emoji": "🎉"})
    with pytest.raises(DecodeError) as caught:
        codecs.event.decode(_write(_event_v2(), datum))
    assert caught.value.reason == "incompatible-schema"
    assert len(caught.value.message) < 400
    # Without the v2 schema at all, the same bytes name an unknown writer.
    with pytest.raises(DecodeError) as unknown:
        decode(_write(_event_v2(), datum))
    assert unknown.value.reason == "unknown-fingerprint"


def test_v2_bytes_of_a_user_message_keep_every_shared_field() -> None:
    codecs = _current_registry_knowing("ConversationEvent", _event_v2())
    record = dataclasses.replace(
        EVENT_SAMPLES["user_message"], body=UserMessage(text="hello", name="Ada")
    )
    datum = convert.event_to_avro(record)
    datum["priority"] = 3
    datum["body"] = ("goaicore.UserMessage", {**datum["body"][1], "language": "de"})
    assert codecs.event.decode(_write(_event_v2(), datum)) == record


def test_a_chat_request_written_before_v2_reads_as_not_streamed_and_not_a_cancel() -> None:
    golden = load_golden("ChatRequest", "v1")
    assert golden  # v1 bytes, written before the stream and cancel fields existed
    for sample, data in golden.items():
        request = decode(data)
        assert isinstance(request, ChatRequest)
        assert request.stream is False, sample
        assert request.cancel is False, sample
        assert request == SAMPLES_BY_SCHEMA["ChatRequest"][sample], sample


def test_a_reader_of_reply_v2_reads_a_cancelled_reply_as_error_keeping_its_text() -> None:
    name = "ChatReply"
    v2 = next(f for f in load_released(name) if f.version == 2)
    registry = SchemaRegistry(
        readers={name: v2.parsed},
        writers={name: [(f.release, f.parsed) for f in load_released(name) if f.release]},
    )
    codec = Codec(
        name, ChatReply, registry, convert.chat_reply_to_avro, convert.chat_reply_from_avro
    )
    data = load_golden(name, "v3")["cancelled"]  # written by v3, which added cancelled
    assert codec.writer.version == 2
    assert codec.decode_datum(data)["status"] == "error"
    cancelled = CHAT_REPLY_SAMPLES["cancelled"]
    assert cancelled.status is ReplyStatus.CANCELLED
    assert codec.decode(data) == dataclasses.replace(cancelled, status=ReplyStatus.ERROR)
    assert decode(data) == cancelled  # the current reader knows the symbol


def test_golden_files_match_the_manifest_fingerprints() -> None:
    for name, release in RELEASES:
        document = json.loads(golden_path(name, release).read_text(encoding="utf-8"))
        released = _released(name, release)
        assert document["schema"] == name
        assert document["version"] == released.version
        assert document.get("release", f"v{released.version}") == release
        assert document["fingerprint"] == fingerprint(released.parsed).hex()
