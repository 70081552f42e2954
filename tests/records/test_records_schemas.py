"""The schema files: fingerprints per the Avro spec, docs, nullability, frozen releases."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from goaicore.records.avro import SchemaLoadError, SchemaRegistry, canonical_form, fingerprint
from goaicore.records.avro.fingerprint import fingerprint_int
from goaicore.records.avro.release import altered, main, pending, release
from goaicore.records.avro.schemas import (
    SCHEMA_NAMES,
    SCHEMAS_DIR_ENV,
    load_current,
    load_manifest,
    load_released,
    load_sums,
    parse_release,
    schemas_dir,
)

# From the Avro project's share/test/data/schema-tests.txt: (input, canonical, fingerprint
# as Java's signed long).
SPEC_VECTORS = [
    ('"null"', '"null"', 7195948357588979594),
    ('{"type":"null"}', '"null"', 7195948357588979594),
    ('"boolean"', '"boolean"', -6970731678124411036),
    ('"int"', '"int"', 8247732601305521295),
    ('"long"', '"long"', -3434872931120570953),
    ('"float"', '"float"', 5583340709985441680),
    ('"double"', '"double"', -8181574048448539266),
    ('"bytes"', '"bytes"', 5746618253357095269),
    ('"string"', '"string"', -8142146995180207161),
    ("[  ]", "[]", -1241056759729112623),
    ('[ "int"  ]', '["int"]', -5232228896498058493),
    ('[ "int" , {"type":"boolean"} ]', '["int","boolean"]', 5392556393470105090),
    (
        '{"fields":[], "type":"record", "name":"foo"}',
        '{"name":"foo","type":"record","fields":[]}',
        -4824392279771201922,
    ),
    (
        '{"fields":[], "type":"record", "name":"foo", "namespace":"x.y"}',
        '{"name":"x.y.foo","type":"record","fields":[]}',
        5916914534497305771,
    ),
    (
        '{"fields":[], "type":"record", "name":"a.b.foo", "namespace":"x.y"}',
        '{"name":"a.b.foo","type":"record","fields":[]}',
        -4616218487480524110,
    ),
    (
        '{"fields":[], "type":"record", "name":"foo", "doc":"foo", "aliases":["foo","bar"]}',
        '{"name":"foo","type":"record","fields":[]}',
        -4824392279771201922,
    ),
    (
        '{"fields":[{"type":{"type":"boolean"}, "name":"f1"}], "type":"record", "name":"foo"}',
        '{"name":"foo","type":"record","fields":[{"name":"f1","type":"boolean"}]}',
        7843277075252814651,
    ),
    (
        '{"fields":[{"type":"boolean", "aliases":[], "name":"f1", "default":true},'
        '{"order":"descending","name":"f2","doc":"Hello","type":"int"}],'
        '"type":"record", "name":"foo"}',
        '{"name":"foo","type":"record","fields":[{"name":"f1","type":"boolean"},'
        '{"name":"f2","type":"int"}]}',
        -4860222112080293046,
    ),
    (
        '{"type":"enum", "name":"foo", "symbols":["A1"]}',
        '{"name":"foo","type":"enum","symbols":["A1"]}',
        -6342190197741309591,
    ),
    (
        '{"namespace":"x.y.z", "type":"enum", "name":"foo", "doc":"foo bar",'
        ' "symbols":["A1", "A2"]}',
        '{"name":"x.y.z.foo","type":"enum","symbols":["A1","A2"]}',
        -4448647247586288245,
    ),
    (
        '{"name":"foo","type":"fixed","size":15}',
        '{"name":"foo","type":"fixed","size":15}',
        1756455273707447556,
    ),
    (
        '{"namespace":"x.y.z", "type":"fixed", "name":"foo", "doc":"foo bar", "size":32}',
        '{"name":"x.y.z.foo","type":"fixed","size":32}',
        -3064184465700546786,
    ),
    (
        '{ "items":{"type":"null"}, "type":"array"}',
        '{"type":"array","items":"null"}',
        -589620603366471059,
    ),
    (
        '{ "values":"string", "type":"map"}',
        '{"type":"map","values":"string"}',
        -8732877298790414990,
    ),
    (
        '{"name":"PigValue","type":"record",'
        '"fields":[{"name":"value", "type":["null", "int", "long", "PigValue"]}]}',
        '{"name":"PigValue","type":"record",'
        '"fields":[{"name":"value","type":["null","int","long","PigValue"]}]}',
        -1759257747318642341,
    ),
]


@pytest.mark.parametrize(("schema", "canonical", "expected"), SPEC_VECTORS)
def test_canonical_form_and_fingerprint_match_the_avro_spec_vectors(
    schema: str, canonical: str, expected: int
) -> None:
    raw = json.loads(schema)
    assert canonical_form(raw) == canonical
    assert fingerprint_int(raw) == expected
    # On the wire: the same 64 bits, little-endian.
    assert fingerprint(raw) == expected.to_bytes(8, "little", signed=True)


def test_null_fingerprint_bytes() -> None:
    assert fingerprint("null").hex() == "8a8f25cce724dd63"


def _walk(schema: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every named type and field definition in a raw schema, with a readable path."""
    if isinstance(schema, list):
        for branch in schema:
            yield from _walk(branch, path)
    elif isinstance(schema, dict):
        kind = schema.get("type")
        if kind == "record":
            here = f"{path}/{schema['name']}"
            yield here, schema
            for field in schema["fields"]:
                yield f"{here}.{field['name']}", field
                yield from _walk(field["type"], f"{here}.{field['name']}")
        elif kind == "enum":
            yield f"{path}/{schema['name']}", schema
        elif kind == "array":
            yield from _walk(schema["items"], path)
        elif kind == "map":
            yield from _walk(schema["values"], path)


CURRENT = {name: load_current(name).raw for name in SCHEMA_NAMES}


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_every_record_field_and_enum_is_documented(name: str) -> None:
    missing = [path for path, node in _walk(CURRENT[name], "") if not node.get("doc")]
    assert missing == []


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_nullable_fields_put_null_first_with_a_null_default(name: str) -> None:
    for path, node in _walk(CURRENT[name], ""):
        if "fields" in node or not isinstance(node.get("type"), list):
            continue
        if "null" in node["type"] and path.split(".")[-1] != "body":
            assert node["type"][0] == "null", path
            assert "default" in node, path
            assert node["default"] is None, path


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_enums_have_a_default_symbol(name: str) -> None:
    for path, node in _walk(CURRENT[name], ""):
        if node.get("type") == "enum":
            assert node.get("default") in node["symbols"], path


def test_all_records_share_one_namespace() -> None:
    assert {raw["namespace"] for raw in CURRENT.values()} == {"goaicore"}


def test_named_types_defined_in_several_files_are_identical() -> None:
    seen: dict[str, tuple[str, Any]] = {}
    for name, raw in CURRENT.items():
        for path, node in _walk(raw, name):
            if "fields" not in node and node.get("type") != "enum":
                continue
            shape = _named_by_name(node)
            known = seen.setdefault(node["name"], (path, shape))
            assert known[1] == shape, f"{path} differs from {known[0]}"
    assert "Usage" in seen
    assert "ToolCall" in seen
    assert "Message" in seen


def _named_by_name(node: Any, top: bool = True) -> Any:
    """``node`` with each named type inside it written as its name: one file may define a
    type where another refers to it by name (each nested definition is checked itself)."""
    if isinstance(node, dict):
        if not top and "name" in node and ("fields" in node or node.get("type") == "enum"):
            return node["name"]
        return {key: _named_by_name(value, False) for key, value in node.items()}
    if isinstance(node, list):
        return [_named_by_name(item, False) for item in node]
    return node


def test_released_files_are_unchanged_since_release() -> None:
    manifest = load_manifest()
    for name in SCHEMA_NAMES:
        released = load_released(name)
        assert {f.release for f in released} == set(manifest[name])
        for f in released:
            assert f.release is not None
            assert fingerprint(f.parsed).hex() == manifest[name][f.release], f.label
    assert altered(schemas_dir()) == []
    # SHA256SUMS lists every released file, and nothing else
    files = {p.relative_to(schemas_dir() / "released").as_posix() for p in _released_files()}
    assert set(load_sums()) == files


def _released_files(root: Path | None = None) -> list[Path]:
    return sorted(((root or schemas_dir()) / "released").glob("*/*.avsc"))


def test_a_released_file_edited_even_in_a_doc_fails_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "schemas"
    shutil.copytree(schemas_dir(), root)
    assert altered(root) == []
    frozen = root / "released" / "ChatReply" / "v2.avsc"
    raw = json.loads(frozen.read_text())
    raw["doc"] = "Reworded after its release."
    frozen.write_text(json.dumps(raw, indent=2))
    # The fingerprint ignores docs; the recorded bytes do not.
    assert altered(root) == ["ChatReply/v2.avsc: its bytes changed since its release (SHA256SUMS)"]
    assert main(["--check", "--root", str(root)]) == 1
    assert "altered: ChatReply/v2.avsc" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="released files were altered"):
        release(root)
    raw["fields"].append({"name": "extra", "type": ["null", "string"], "default": None})
    frozen.write_text(json.dumps(raw, indent=2))
    problems = altered(root)
    assert problems[0].startswith("ChatReply/v2.avsc: fingerprint ")
    assert problems[0].endswith(", released as dbd85f11b334c181")
    (root / "released" / "ChatReply" / "v9.avsc").write_text(json.dumps(raw))
    frozen.unlink()
    assert altered(root) == [
        "ChatReply/v9.avsc: not in fingerprints.json",
        "ChatReply/v9.avsc: not in SHA256SUMS",
        "ChatReply/v2.avsc: released, but missing",
        "ChatReply/v2.avsc: in SHA256SUMS, but missing",
    ]


def test_nothing_unreleased_is_written() -> None:
    assert pending(schemas_dir()) == []
    for name in SCHEMA_NAMES:
        assert SchemaRegistry.from_files().current(name).version is not None


def test_release_freezes_a_changed_schema_as_the_next_version(tmp_path: Path) -> None:
    root = tmp_path / "schemas"
    shutil.copytree(schemas_dir(), root)
    raw = json.loads((root / "ChatRequest.avsc").read_text())
    raw["fields"].append({"name": "locale", "type": ["null", "string"], "default": None})
    (root / "ChatRequest.avsc").write_text(json.dumps(raw))
    latest = load_released("ChatRequest", root)[-1].version
    assert latest is not None
    following = latest + 1
    assert [(p.name, p.version) for p in pending(root)] == [("ChatRequest", following)]
    released = release(root)
    assert [(p.name, p.version) for p in released] == [("ChatRequest", following)]
    frozen = root / "released" / "ChatRequest" / f"v{following}.avsc"
    assert frozen.read_text() == json.dumps(raw)
    assert load_manifest(root)["ChatRequest"][f"v{following}"] == released[0].fingerprint
    assert f"ChatRequest/v{following}.avsc" in load_sums(root)
    assert altered(root) == []
    assert pending(root) == []
    registry = SchemaRegistry.from_files(root)
    assert registry.current("ChatRequest").version == following
    releases = [f.release for f in load_released("ChatRequest", root)]
    assert releases[-1] == f"v{following}"
    assert [w.release for w in registry.writers("ChatRequest")] == releases


def test_a_docs_only_edit_needs_no_release(tmp_path: Path) -> None:
    root = tmp_path / "schemas"
    shutil.copytree(schemas_dir(), root)
    raw = json.loads((root / "ChatReply.avsc").read_text())
    raw["doc"] = "Reworded."
    (root / "ChatReply.avsc").write_text(json.dumps(raw))
    assert pending(root) == []


def test_the_schemas_folder_can_be_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "elsewhere"
    shutil.copytree(schemas_dir(), root)
    monkeypatch.setenv(SCHEMAS_DIR_ENV, str(root))
    assert schemas_dir() == root
    # A wrong setting is an error, not a silent fallback to some other folder.
    monkeypatch.setenv(SCHEMAS_DIR_ENV, str(tmp_path / "missing"))
    with pytest.raises(SchemaLoadError, match=SCHEMAS_DIR_ENV):
        schemas_dir()


def test_a_broken_schema_file_is_a_clear_load_error(tmp_path: Path) -> None:
    root = tmp_path / "schemas"
    shutil.copytree(schemas_dir(), root)
    (root / "ChatReply.avsc").write_text('{"type": "record", "name": "ChatReply"')
    with pytest.raises(SchemaLoadError, match=r"ChatReply\.avsc"):
        SchemaRegistry.from_files(root)
    (root / "ChatReply.avsc").write_text(json.dumps(CURRENT["ChatRequest"]))
    with pytest.raises(SchemaLoadError, match="defines record 'ChatRequest'"):
        SchemaRegistry.from_files(root)


def test_a_release_is_named_v_n_or_v_n_original() -> None:
    assert parse_release("v3") == (3, False)
    assert parse_release("v3-original") == (3, True)
    for wrong in ("3", "v0", "v3-orig", "v3.avsc", "current"):
        with pytest.raises(ValueError, match="names no release"):
            parse_release(wrong)
    reader = load_current("ChatReply").parsed
    with pytest.raises(ValueError, match="names no release"):
        SchemaRegistry(readers={"ChatReply": reader}, writers={"ChatReply": [("3", reader)]})


def test_the_registry_knows_an_original_by_its_own_fingerprint() -> None:
    registry = SchemaRegistry.from_files()
    for f in load_released("ConversationKey"):
        writer = registry.writer(fingerprint(f.parsed))
        assert writer is not None
        assert (writer.release, writer.version) == (f.release, 1)
    assert [w.label for w in registry.writers("ConversationKey")] == [
        "ConversationKey v1-original",
        "ConversationKey v1",
    ]
    assert registry.current("ConversationKey").release == "v1"
