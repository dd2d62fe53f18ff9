"""Text that reaches a terminal: the one sanitiser (issue 34 item 7; stdlib, Python 3.9).

Why: what the CLIs print comes from places a tenant writes. A report's messages quote env
values and model names; a GPUValidation's findings, an Event's message, a pod's status and a
manifest's names are any tenant's text. A terminal obeys what it is sent: ``ESC ] 52`` writes
the reader's clipboard, ``ESC ] 8`` makes a link whose text lies about its target,
``ESC [ 2 J`` clears the screen (and hides what came before), the one byte 0x9b is a CSI
on terminals that read C1 controls, and a BiDi override (U+202E) makes ``rm -rf`` read
backwards. So every path to a terminal (`check`'s table, `lint`'s text report, the kubectl
plugin's `status`, `explain`, `audit` and `check-node`) passes its foreign text through
:func:`clean` (or :func:`clean_tree` for a whole document) *before* it adds its own colour,
and nothing else decides what a control byte is.

What stays: printable text, ``\\n`` and ``\\t`` where the layout needs them
(``keep_newlines``). What goes: escape sequences whole (CSI, OSC up to its BEL or ST, the
other two-byte ESC forms), their 8-bit forms (0x9b CSI, 0x9d OSC, 0x90 DCS, ...), every
other C0 and C1 control and DEL, and the Unicode format characters that reorder or hide text
(BiDi embeddings, overrides and isolates, the marks, the zero-width joiners' relatives
listed in :data:`_INVISIBLE`). A removed single control leaves ``?`` in its place, so the
reader sees that something was there; a removed sequence leaves nothing.
"""

from __future__ import annotations

import re
from typing import Any

# ESC [ ... final (CSI); ESC ] ... BEL or ST (OSC); ESC P/X/^/_ ... ST (DCS, SOS, PM, APC);
# ESC and one more byte (the rest). The 8-bit forms: 0x9b CSI, 0x9d OSC, 0x90/0x98/0x9e/0x9f
# strings ended by BEL, ST (ESC \\) or 0x9c. An unterminated string runs to the end: it is
# removed to the end, as a terminal would swallow it.
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[\x20-\x3f]*[\x40-\x7e]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?",
    re.DOTALL,
)
# BiDi embeddings/overrides/isolates and marks, and characters that hide text.
_INVISIBLE = "\u061c\u200b\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff"
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + _INVISIBLE + "]")
_CONTROL_NO_NEWLINES = re.compile("[\x00-\x1f\x7f-\x9f" + _INVISIBLE + "]")


def clean(text: object, *, keep_newlines: bool = True) -> str:
    """``text`` as a terminal may show it: escape sequences removed, every other control
    byte (and ``\\n``/``\\t`` too when not ``keep_newlines``) shown as ``?``."""
    value = text if isinstance(text, str) else str(text)
    if value.isprintable() and "\x1b" not in value:
        return value  # the common case, no regex pass
    value = _SEQUENCE.sub("", value)
    control = _CONTROL if keep_newlines else _CONTROL_NO_NEWLINES
    return control.sub("?", value)


def clean_tree(value: Any, *, depth: int = 64) -> Any:
    """A decoded JSON document with every string (keys too) passed through :func:`clean`;
    deeper than ``depth`` the rest is dropped (a view never needs it)."""
    if isinstance(value, str):
        return clean(value)
    if depth <= 0:
        return None
    if isinstance(value, dict):
        return {clean(k): clean_tree(v, depth=depth - 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_tree(v, depth=depth - 1) for v in value]
    return value


def has_control(text: str, *, allow_sgr: bool = False) -> bool:
    """True when ``text`` holds a byte :func:`clean` would remove (``\\n``/``\\t`` allowed);
    with ``allow_sgr`` a plain colour sequence (``ESC [ digits;... m``) is allowed: the
    tools' own colour."""
    if allow_sgr:
        text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return bool(_CONTROL.search(text)) or "\x1b" in text


__all__ = ["clean", "clean_tree", "has_control"]
