"""What Apache Avro's Java reference implementation finds about our schemas.

``find()`` runs ``java/AvroReference.java`` once (a single source file, no build step) on
Avro's jars, fetched with Maven into goaicore's cache like Apache Kafka's
(:mod:`goaicore.maven`), over every released schema file and every current one:
``SchemaNormalization.parsingFingerprint64`` of each, and
``SchemaCompatibility.checkReaderWriterCompatibility`` of every ordered pair of files of
the same record (each consecutive pair of releases both ways, the current schema against
every release both ways, and the rest). ``render()`` makes the table committed as
``schemas/COMPATIBILITY.md``; ``python -m tests.records.avro_reference`` rewrites it.
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from goaicore.maven import MavenUnavailable, cache_root, classpath, java_program_unavailable
from goaicore.records.avro.schemas import (
    SCHEMA_NAMES,
    SchemaFile,
    load_current,
    load_released,
    schemas_dir,
)

AVRO_VERSION = "1.12.1"
JAVA_DIR = Path(__file__).resolve().parent / "java"
POM = JAVA_DIR / "pom.xml"
PROGRAM = JAVA_DIR / "AvroReference.java"
TABLE = "COMPATIBILITY.md"
CURRENT = "current"
RUN_TIMEOUT = 300.0
MIN_JAVA = 11  # running a single source file


class AvroUnavailable(RuntimeError):
    """Avro's Java reference cannot run here; the message is one line saying why."""


def avro_dir() -> Path:
    """Where Avro's jars are cached, beside Apache Kafka's."""
    return cache_root() / f"avro-{AVRO_VERSION}"


def unavailable_reason() -> str | None:
    """None when Avro's Java reference can run here (java 11+, and mvn or cached jars)."""
    return java_program_unavailable(avro_dir(), "the Apache Avro jars", MIN_JAVA)


def avro_jars() -> list[Path]:
    """Avro's runtime classpath, fetched with Maven on first use."""
    try:
        return classpath(
            POM, avro_dir(), f"Apache Avro {AVRO_VERSION}", {"avro.version": AVRO_VERSION}
        )
    except MavenUnavailable as err:
        raise AvroUnavailable(str(err)) from None


def schema_files(root: Path | None = None) -> dict[str, list[tuple[str, SchemaFile]]]:
    """Per record: (label, file) of every release in release order, then ``current``."""
    files: dict[str, list[tuple[str, SchemaFile]]] = {}
    for name in SCHEMA_NAMES:
        released = [(f.release, f) for f in load_released(name, root) if f.release]
        files[name] = [*released, (CURRENT, load_current(name, root))]
    return files


@dataclass(frozen=True)
class Pair:
    """What Avro finds when ``reader`` reads data written with ``writer``."""

    reader: str
    writer: str
    compatible: bool
    incompatibilities: tuple[str, ...]


@dataclass(frozen=True)
class Findings:
    """Fingerprints (Java's signed longs) and pairs, keyed by record name then label."""

    labels: dict[str, list[str]]
    fingerprints: dict[str, dict[str, int]]
    pairs: dict[str, dict[tuple[str, str], Pair]]

    def reads(self, name: str, reader: str, writer: str) -> bool:
        return self.pairs[name][(reader, writer)].compatible


def run(files: dict[str, list[tuple[str, SchemaFile]]], jars: list[Path]) -> str:
    """AvroReference.java's output over ``files``: one JVM for all of them."""
    java = shutil.which("java")
    if java is None:
        raise AvroUnavailable("no `java` on PATH")
    plan = "".join(
        f"{name}\t{label}\t{f.path}\n" for name, entries in files.items() for label, f in entries
    )
    command = [
        java,
        "-XX:TieredStopAtLevel=1",
        "-Dslf4j.internal.verbosity=ERROR",
        "-cp",
        ":".join(str(jar) for jar in jars),
        str(PROGRAM),
    ]
    answer = subprocess.run(
        command, input=plan, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False
    )
    if answer.returncode != 0:
        raise RuntimeError(f"AvroReference.java failed ({answer.returncode}): {answer.stderr}")
    return answer.stdout


def parse(output: str, files: dict[str, list[tuple[str, SchemaFile]]]) -> Findings:
    """The findings in AvroReference.java's output."""
    labels = {name: [label for label, _ in entries] for name, entries in files.items()}
    raw = {name: {label: f.raw for label, f in entries} for name, entries in files.items()}
    fingerprints: dict[str, dict[str, int]] = {name: {} for name in files}
    pairs: dict[str, dict[tuple[str, str], Pair]] = {name: {} for name in files}
    for line in output.splitlines():
        kind, name, *rest = line.split("\t")
        if kind == "fingerprint":
            label, value = rest
            fingerprints[name][label] = int(value)
        elif kind == "compat":
            reader, writer, result, *found = rest
            described = tuple(_describe(item, raw[name][writer]) for item in found)
            pairs[name][(reader, writer)] = Pair(reader, writer, result == "COMPATIBLE", described)
        else:
            raise ValueError(f"AvroReference.java printed {line!r}")
    return Findings(labels, fingerprints, pairs)


def _describe(item: str, writer: Any) -> str:
    """``MISSING_UNION_BRANCH@/fields/5/type/8`` as ``MISSING_UNION_BRANCH at
    /fields/5/type/8 (ConversationRewound)``: a branch the reader's union lacks is the
    writer's, named where the location points at a named type of the writer schema."""
    kind, _, location = item.partition("@")
    node = writer
    for step in location.strip("/").split("/") if location.strip("/") else []:
        if isinstance(node, dict) and step in node:
            node = node[step]
        elif isinstance(node, list) and step.isdigit() and int(step) < len(node):
            node = node[int(step)]
        else:
            node = None
            break
    named = node.get("name") if kind == "MISSING_UNION_BRANCH" and isinstance(node, dict) else None
    return f"{kind} at {location}" + (f" ({named})" if named else "")


def find(root: Path | None = None) -> Findings:
    """Run Avro's Java reference over the schemas folder (fetching its jars if need be)."""
    files = schema_files(root)
    return parse(run(files, avro_jars()), files)


def level(findings: Findings, name: str) -> str:
    """Backward and forward compatibility of ``name`` over its releases, as Avro finds it.

    Backward: a release reads what the one before wrote; transitive: every release
    (and the current schema) reads every older one. Forward the other way round.
    """
    chain = findings.labels[name]
    older_newer = list(itertools.combinations(chain, 2))
    steps = list(itertools.pairwise(chain))
    backward_all = all(findings.reads(name, new, old) for old, new in older_newer)
    forward_all = all(findings.reads(name, old, new) for old, new in older_newer)
    if backward_all and forward_all:
        return "full-transitive"
    backward = "backward-transitive" if backward_all else "backward"
    if not backward_all and not all(findings.reads(name, new, old) for old, new in steps):
        backward = "not backward"
    forward = "forward-transitive" if forward_all else "forward"
    if not forward_all and not all(findings.reads(name, old, new) for old, new in steps):
        forward = "not forward"
    return f"{backward}, {forward}"


def unreadable_steps(findings: Findings, name: str) -> list[tuple[str, str]]:
    """The consecutive (older, newer) pairs where the older cannot read the newer."""
    chain = findings.labels[name]
    return [
        (old, new) for old, new in itertools.pairwise(chain) if not findings.reads(name, old, new)
    ]


def render(findings: Findings) -> str:
    """The committed table: a summary per record, then each record's reader x writer grid."""
    lines = [
        "# Schema compatibility, as Apache Avro finds it",
        "",
        f"What Apache Avro {AVRO_VERSION}'s Java reference implementation "
        "(`org.apache.avro.SchemaCompatibility.checkReaderWriterCompatibility`) finds for "
        "every pair of versions of each record: its releases in release order "
        "(`v<N>-original` is the first text of a release rewritten in place, see "
        "`README.md`), then the current schema.",
        "",
        "Generated: `tests/records/test_avro_reference.py` runs Avro over `schemas/` and "
        "fails while this file differs from what it finds; "
        "`python -m tests.records.avro_reference` rewrites it. Do not edit it by hand.",
        "",
        "Backward: a reader reads what older releases wrote (transitive: every older one). "
        "Forward: a reader reads what newer releases write.",
        "",
        "| record | Avro finds | a release that cannot read the next |",
        "|---|---|---|",
    ]
    for name in findings.labels:
        steps = unreadable_steps(findings, name)
        cannot = "; ".join(f"{old} cannot read {new}" for old, new in steps) or "-"
        lines.append(f"| `{name}` | {level(findings, name)} | {cannot} |")
    for name, labels in findings.labels.items():
        lines += [
            "",
            f"## {name}",
            "",
            "Rows read, columns wrote: `yes` where the row's schema, as reader, reads "
            "everything the column's schema writes.",
            "",
            "| reader \\ writer | " + " | ".join(labels) + " |",
            "|---|" + "---|" * len(labels),
        ]
        for reader in labels:
            cells = ["yes" if findings.reads(name, reader, w) else "no" for w in labels]
            lines.append(f"| {reader} | " + " | ".join(cells) + " |")
        problems = [
            pair
            for reader in labels
            for writer in labels
            if not (pair := findings.pairs[name][(reader, writer)]).compatible
        ]
        if problems:
            lines.append("")
            for pair in problems:
                found = "; ".join(pair.incompatibilities)
                lines.append(f"- {pair.reader} reading {pair.writer}: {found}")
    return "\n".join(lines) + "\n"


def table_path(root: Path | None = None) -> Path:
    return (schemas_dir() if root is None else root) / TABLE


if __name__ == "__main__":
    reason = unavailable_reason()
    if reason is not None:
        sys.exit(f"cannot run Apache Avro's Java reference: {reason}")
    path = table_path()
    path.write_text(render(find()), encoding="utf-8")
    print(f"wrote {path}")
