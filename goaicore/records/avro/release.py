"""Freeze the current schemas as released versions: ``python -m goaicore.records.avro.release``.

A schema whose Parsing Canonical Form differs from its latest release (a wire change:
docs and defaults alone do not count) is copied byte for byte to
``schemas/released/<Name>/v<N+1>.avsc``, its fingerprint recorded in
``schemas/released/fingerprints.json`` and the SHA-256 of its bytes in
``schemas/released/SHA256SUMS``. A released file never changes again: ``altered`` names
any whose bytes or fingerprint differ from what was recorded (an edited doc too), and
nothing is released while one does. ``--check`` only reports, and exits 1 when a release
is pending or a released file was altered, so CI can insist that nothing unreleased is
ever written and nothing released is ever rewritten.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from goaicore.records.avro.fingerprint import canonical_form, fingerprint
from goaicore.records.avro.schemas import (
    SCHEMA_NAMES,
    file_sha256,
    load_current,
    load_manifest,
    load_released,
    load_sums,
    manifest_path,
    schemas_dir,
    write_sums,
)


@dataclass(frozen=True)
class PendingRelease:
    """``name`` changed on the wire since its latest release; it would become ``version``."""

    name: str
    version: int
    fingerprint: str


def pending(root: Path) -> list[PendingRelease]:
    """The schemas whose current form is not yet a released version."""
    found = []
    for name in SCHEMA_NAMES:
        current = load_current(name, root)
        released = load_released(name, root)
        if released and canonical_form(released[-1].parsed) == canonical_form(current.parsed):
            continue
        version = released[-1].version + 1 if released and released[-1].version else 1
        found.append(PendingRelease(name, version, fingerprint(current.parsed).hex()))
    return found


def altered(root: Path) -> list[str]:
    """What differs from the record of the released files, one line each; [] when nothing.

    Every released file must be recorded in ``fingerprints.json`` under its release with
    the fingerprint it has, and in ``SHA256SUMS`` with the hash of its bytes; every
    recorded release must have its file.
    """
    manifest = load_manifest(root)
    sums = load_sums(root)
    found: list[str] = []
    seen: set[str] = set()
    for name in SCHEMA_NAMES:
        recorded = dict(manifest.get(name, {}))
        for f in load_released(name, root):
            assert f.release is not None
            relative = f"{name}/{f.path.name}"
            seen.add(relative)
            expected = recorded.pop(f.release, None)
            actual = fingerprint(f.parsed).hex()
            if expected is None:
                found.append(f"{relative}: not in fingerprints.json")
            elif expected != actual:
                found.append(f"{relative}: fingerprint {actual}, released as {expected}")
            digest = sums.get(relative)
            if digest is None:
                found.append(f"{relative}: not in SHA256SUMS")
            elif digest != file_sha256(f.path):
                found.append(f"{relative}: its bytes changed since its release (SHA256SUMS)")
        found += [f"{name}/{release}.avsc: released, but missing" for release in recorded]
    found += [f"{relative}: in SHA256SUMS, but missing" for relative in sorted(sums.keys() - seen)]
    return found


def release(root: Path) -> list[PendingRelease]:
    """Freeze every pending schema and record its fingerprint; returns what was released."""
    problems = altered(root)
    if problems:
        raise SystemExit("released files were altered; restore them first: " + "; ".join(problems))
    todo = pending(root)
    manifest = load_manifest(root)
    sums = load_sums(root)
    for item in todo:
        target = root / "released" / item.name / f"v{item.version}.avsc"
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            raise SystemExit(f"{target} already exists; released files are never overwritten")
        shutil.copyfile(root / f"{item.name}.avsc", target)
        manifest.setdefault(item.name, {})[f"v{item.version}"] = item.fingerprint
        sums[f"{item.name}/{target.name}"] = file_sha256(target)
    if todo:
        path = manifest_path(root)
        path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        write_sums(sums, root)
    return todo


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="report pending releases only")
    parser.add_argument("--root", type=Path, default=None, help="the schemas folder")
    args = parser.parse_args(argv)
    root: Path = args.root or schemas_dir()
    if args.check:
        problems = altered(root)
        for problem in problems:
            print(f"altered: {problem}")
        todo = pending(root)
        for item in todo:
            print(f"unreleased: {item.name} would be v{item.version} ({item.fingerprint})")
        return 1 if todo or problems else 0
    for item in release(root):
        print(f"released {item.name} v{item.version} ({item.fingerprint})")
    print("next: add golden bytes for the new versions (python -m tests.records.make_golden)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
