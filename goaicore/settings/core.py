"""How the package itself runs: the compiled core or pure Python."""

from __future__ import annotations

from typing import Literal, get_args

from goaicore.settings.declare import Setting, one_of

NativeCore = Literal["auto", "off"]

CORE: tuple[Setting, ...] = (
    Setting(
        "native",
        "GOAICORE_NATIVE",
        "`auto`",
        "`off` reads and writes every record with the generated Python reader and writer "
        "and folds in Python alone even where the compiled core (`native/`, Rust, which "
        "`make` builds wherever cargo is found) is installed; the records, snapshots and "
        "bytes are the same, the work slower.",
        one_of(*get_args(NativeCore)),
        "auto",
    ),
)
