"""The line a key or table starts on in a TOML text, found by tomllib itself.

tomllib gives no positions, so nothing here reads TOML: it parses the text's
first n lines. Such a prefix parses exactly when it ends between two
statements (a cut inside a multi-line string or array leaves it unclosed), and
then holds exactly what those lines define. So the first prefix that parses and
holds a key ends on the key's last line, and the key starts on the line after
the prefix that parses before it.

Paths are tuples: ("lab", "name"), ("defaults", "mtu"), ("scenario", 2,
"nodelay") for the third [[scenario]]'s key.
"""

from __future__ import annotations

import bisect
import tomllib
from typing import Any

KeyPath = tuple[str | int, ...]


def line_of(text: str, path: KeyPath) -> int | None:
    """The line `path` starts on, else its nearest enclosing key or table's; None for none."""
    lines = text.split("\n")  # tomllib counts lines by "\n" too

    def parsed_before(end: int) -> tuple[int, dict[str, Any]]:
        """The longest prefix of at most `end` lines that parses: its length, its data."""
        while True:
            try:
                return end, tomllib.loads("\n".join(lines[:end]))
            except tomllib.TOMLDecodeError:
                end -= 1  # the first 0 lines always parse

    whole = parsed_before(len(lines))[1]
    while path and not holds(whole, path):
        path = path[:-1]
    if not path:
        return None
    # Holding `path` only grows with the prefix: the first that holds it ends on its last line.
    last = bisect.bisect_left(
        range(len(lines) + 1), True, key=lambda end: holds(parsed_before(end)[1], path)
    )
    return parsed_before(last - 1)[0] + 1


def holds(data: Any, path: KeyPath) -> bool:
    """Whether parsed TOML `data` has a value at `path`."""
    for step in path:
        in_table = isinstance(step, str) and isinstance(data, dict) and step in data
        in_array = isinstance(step, int) and isinstance(data, list) and 0 <= step < len(data)
        if not (in_table or in_array):
            return False
        data = data[step]
    return True
