"""``--json``: what a command found as one JSON document (or JSON lines), for scripts.

Records and result rows go through :func:`goaicore.records.jsonable.jsonable`:
dataclasses as objects, times in ISO form, enums by value. Bytes are base64.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from typing import Any

from goaicore.records.jsonable import jsonable


def add_json_option(parser: argparse.ArgumentParser, lines: bool = False) -> None:
    what = "one JSON object per line" if lines else "one JSON document"
    parser.add_argument("--json", action="store_true", help=f"print {what} instead of text")


def _plain(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, set | frozenset):
        return sorted(_plain(v) for v in value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    try:
        return jsonable(value)
    except TypeError:
        return repr(value)


def print_json(document: Any, line: bool = False) -> None:
    """Print ``document`` as JSON on stdout: indented, or compact on one line (``line``)."""
    if line:
        text = json.dumps(_plain(document), ensure_ascii=False, separators=(",", ":"))
    else:
        text = json.dumps(_plain(document), ensure_ascii=False, indent=2)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
