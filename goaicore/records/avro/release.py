"""Freeze the current schemas as released versions: ``python -m goaicore.records.avro.release``.

A schema whose Parsing Canonical Form differs from its latest release (a wire change:
docs and defaults alone do not count) is copied byte for byte to
``schemas/released/<Name>/v<N+1>.avsc`` and its fingerprint recorded in
``schemas/released/fingerprints.json``. ``--check`` only reports, and exits 1 when a
release is pending, so CI can insist that nothing unreleased is ever written.
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
    load_current,
    load_manifest,
    load_released,
    manifest_path,
    schemas_dir,
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


def release(root: Path) -> list[PendingRelease]:
    """Freeze every pending schema and record its fingerprint; returns what was released."""
    todo = pending(root)
    manifest = load_manifest(root)
    for item in todo:
        target = root / "released" / item.name / f"v{item.version}.avsc"
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            raise SystemExit(f"{target} already exists; released files are never overwritten")
        shutil.copyfile(root / f"{item.name}.avsc", target)
        manifest.setdefault(item.name, {})[f"v{item.version}"] = item.fingerprint
    if todo:
        path = manifest_path(root)
        path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return todo


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="report pending releases only")
    parser.add_argument("--root", type=Path, default=None, help="the schemas folder")
    args = parser.parse_args(argv)
    root: Path = args.root or schemas_dir()
    if args.check:
        todo = pending(root)
        for item in todo:
            print(f"unreleased: {item.name} would be v{item.version} ({item.fingerprint})")
        return 1 if todo else 0
    for item in release(root):
        print(f"released {item.name} v{item.version} ({item.fingerprint})")
    print("next: add golden bytes for the new versions (python -m tests.records.make_golden)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
