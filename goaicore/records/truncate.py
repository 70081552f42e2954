"""Cut a text down to a number of UTF-8 bytes, saying so where the reader (or model) looks.

Every place that must keep a text under a byte limit (a snapshot's size bound,
a record's limit, a tool result's share of it) cuts the same way: the
beginning is kept, never half a character, and a marker names what was cut.
"""

from __future__ import annotations

import json

MARKER = "[goaicore: {what}; {kept} of {total} bytes kept{where}]"


def utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def truncate_utf8(text: str, max_bytes: int, what: str, where: str = "") -> str:
    """``text`` in at most ``max_bytes`` UTF-8 bytes, its cut-off end replaced by a marker.

    ``what`` says why (e.g. "truncated to fit the record size limit"), ``where`` where
    the full text is, if anywhere. A text that fits comes back unchanged; a limit
    smaller than the marker keeps the marker alone.
    """
    total = utf8_size(text)
    if total <= max_bytes:
        return text
    suffix = "\n" + MARKER.format(what=what, kept="{kept}", total=total, where=where)
    room = max(max_bytes - utf8_size(suffix) - 20, 0)  # 20: the digits of {kept}
    kept = text.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
    return kept + suffix.replace("{kept}", str(utf8_size(kept)))


def truncate_json_arguments(arguments: str, max_bytes: int) -> str:
    """Tool call ``arguments`` in at most ``max_bytes``: whole, or their beginning held in
    ``{"goaicore_truncated": ...}``, a JSON object, which every provider accepts.

    Escaping may make the kept part longer than it was: it is halved until the whole fits.
    """
    if utf8_size(arguments) <= max_bytes:
        return arguments
    data = arguments.encode("utf-8", "surrogatepass")
    room = max_bytes
    while True:
        prefix = data[:room].decode("utf-8", "ignore")
        wrapped = json.dumps({"goaicore_truncated": prefix}, ensure_ascii=False)
        if utf8_size(wrapped) <= max_bytes or room == 0:
            return wrapped
        room //= 2
