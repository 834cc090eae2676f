"""Text typed by one person and shown to another: names cleaned, anything else made printable.

Rules:
- A name (a student's, a lab's or a scenario's as read from a file) keeps
  letters, digits, marks, punctuation, symbols and single spaces: control
  characters (C0, C1, DEL: escape sequences), format characters (the bidi
  overrides and isolates, zero-width ones), private-use, unassigned and
  surrogate code points, and line or paragraph separators are dropped; any
  run of whitespace becomes one space; at most NAME_MAX characters remain.
  It is cleaned when typed (the forms) and again when printed (tfolab grade),
  since a file may have been written by anything.
- Other text from a file (its name, a decoder's message) is made printable:
  each such character is shown as an escape (\\x1b, \\u202e), so the teacher
  sees which file it was and the terminal sees no control sequence.
- A spreadsheet cell that starts with = + - @, a TAB or a CR is a formula
  to some spreadsheets: `csv_cell` puts an apostrophe before it.
"""

from __future__ import annotations

import unicodedata

NAME_MAX = 60  # characters: a full name fits, a megabyte does not
_DROPPED = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _unsafe(char: str) -> bool:
    return unicodedata.category(char) in _DROPPED


def clean_name(text: str, limit: int = NAME_MAX) -> str:
    """`text` as a name: no control or bidi characters, single spaces, at most `limit` long."""
    kept = "".join(" " if char.isspace() else char for char in text if not _unsafe(char))
    return " ".join(kept.split())[:limit].strip()


def printable(text: str) -> str:
    """`text` with every control, format or separator character shown as an escape."""
    out = []
    for char in text:
        if _unsafe(char):
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)


def csv_cell(text: str) -> str:
    """A printable CSV cell that no spreadsheet reads as a formula."""
    shown = printable(text)
    return "'" + shown if shown.startswith(_FORMULA_START) else shown
