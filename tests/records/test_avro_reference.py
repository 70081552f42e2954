"""Our schemas as Apache Avro's Java reference implementation sees them.

One JVM runs ``java/AvroReference.java`` (Avro's jars fetched with Maven once, into
goaicore's cache) over every released and current schema file:

- the compatibility it finds, every reader against every writer of each record (each
  consecutive pair of releases both ways, the current schema against every release both
  ways), is exactly the table committed as ``schemas/COMPATIBILITY.md``, so a change in
  compatibility is a visible diff there, and ``schemas/README.md`` states each record's
  level as Avro finds it;
- the fingerprint it computes for every released file is the one recorded in
  ``fingerprints.json`` and the one goaicore computes, and for every current file
  goaicore's.

Skipped, with the reason, where Java 11+ or Maven (for the first fetch) is missing.
"""

from __future__ import annotations

import pytest

from goaicore.records.avro.fingerprint import fingerprint_int
from goaicore.records.avro.schemas import load_manifest, schemas_dir
from tests.records.avro_reference import (
    CURRENT,
    Findings,
    find,
    level,
    render,
    schema_files,
    table_path,
    unavailable_reason,
)


@pytest.fixture(scope="module")
def findings() -> Findings:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"needs Apache Avro's Java reference: {reason}")
    return find()


def test_avro_finds_the_compatibility_the_committed_table_states(findings: Findings) -> None:
    found = render(findings)
    print(found)  # what Avro finds, in the run's output
    committed = table_path().read_text(encoding="utf-8")
    assert found == committed, (
        f"Apache Avro finds other compatibility than {table_path().name} states: review "
        "the difference, then rewrite it with python -m tests.records.avro_reference"
    )


def test_every_pair_was_checked_both_ways(findings: Findings) -> None:
    for name, labels in findings.labels.items():
        assert labels[-1] == CURRENT
        assert set(findings.pairs[name]) == {(r, w) for r in labels for w in labels}


def test_the_schemas_readme_states_what_avro_finds(findings: Findings) -> None:
    readme = (schemas_dir() / "README.md").read_text(encoding="utf-8")
    for name in findings.labels:
        row = f"| `{name}` | {level(findings, name)} |"
        assert row in readme, f"schemas/README.md has no row {row}"


def test_avro_computes_the_recorded_fingerprints_and_goaicores(findings: Findings) -> None:
    manifest = load_manifest()
    compared = 0
    for name, entries in schema_files().items():
        for label, f in entries:
            by_avro = findings.fingerprints[name][label]
            assert by_avro == fingerprint_int(f.parsed), f.label
            if label != CURRENT:
                recorded = bytes.fromhex(manifest[name][label])
                assert by_avro == int.from_bytes(recorded, "little", signed=True), f.label
                compared += 1
    assert compared == sum(len(releases) for releases in manifest.values())
