"""Write golden payloads for released schema versions: ``python -m tests.records.make_golden``.

For each released version whose wire form equals the current schema (the version just
released), encode every sample of ``records_samples`` and store the hex bytes in
``golden/<Name>.v<N>.json``. Existing golden files are never rewritten: they are the
proof that bytes written by that release still decode. (``<Name>.v<N>-original.json``
hold the bytes a release rewritten in place wrote before it was rewritten, as committed
then; see ``schemas/README.md``.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from goaicore.records.avro import default_codecs
from goaicore.records.avro.schemas import load_released
from tests.records.records_samples import SAMPLES_BY_SCHEMA

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"


def golden_path(name: str, release: str) -> Path:
    """Where the golden payloads of ``name``'s ``release`` (``v2``, ``v3-original``) live."""
    return GOLDEN_DIR / f"{name}.{release}.json"


def load_golden(name: str, release: str) -> dict[str, bytes]:
    """Sample name -> payload bytes written by that release."""
    data = json.loads(golden_path(name, release).read_text(encoding="utf-8"))
    return {sample: bytes.fromhex(hex_) for sample, hex_ in data["samples"].items()}


def write_missing() -> list[Path]:
    """Golden files for released versions equal to the current schema, when missing."""
    codecs = default_codecs()
    written = []
    for name, samples in SAMPLES_BY_SCHEMA.items():
        codec = codecs.by_name(name)
        for released in load_released(name):
            assert released.release is not None
            path = golden_path(name, released.release)
            if path.exists() or codec.writer.release != released.release:
                continue
            document = {
                "schema": name,
                "version": released.version,
                "fingerprint": codec.writer.fingerprint.hex(),
                "samples": {key: codec.encode(record).hex() for key, record in samples.items()},
            }
            GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
            written.append(path)
    return written


if __name__ == "__main__":
    for path in write_missing():
        print(f"wrote {path}")
    sys.exit(0)
