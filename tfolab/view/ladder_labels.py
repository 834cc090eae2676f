"""What the ladder writes: arrow labels that drop fields in order, notes that wrap.

Rules:
- Pure text. An arrow's label is built from its segment's fields, and when it
  does not fit it drops them in this order: the SYN's option line, seq=,
  ack=, the TFO word; flags, len= (what the segment carries) and "lost" (a
  segment the path lost) stay to the last, and only then is the text cut with "…".
- A SYN or SYN-ACK also has a second line, its options (MSS, SACK,
  timestamps, window scale), in full or compact ("mss 65495 sack TS ws 10").
- Side texts (application calls, timers, notes) wrap into their column, at
  most MAX_TEXT_LINES lines (a note MAX_NOTE_LINES): a note longer than that
  shows its longest head that fits (the text up to the end of a clause), the
  whole being in the step panel; a text is cut with "…" only if no head fits.
"""

from __future__ import annotations

import re
import textwrap

from tfolab.model.events import Segment
from tfolab.model.options import FastOpen, SackPermitted, TcpOption, WindowScale
from tfolab.view.kernel_segment import KernelSegment

MAX_TEXT_LINES = 4  # an application call or timer
MAX_NOTE_LINES = 4  # a note: its first clause if the whole does not fit


def cut(text: str, room: int) -> str:
    if len(text) <= room:
        return text
    return text[: max(room - 1, 0)] + "…" if room > 0 else ""


def label_variants(segment: Segment) -> list[str]:
    """The arrow's label, longest first, each dropping one more field."""
    prefix = ""
    if isinstance(segment, KernelSegment):
        if segment.as_model:
            return [segment.label()]  # "✓ kernel": only cutting can shorten it
        prefix = segment.mark
    flags = ",".join(segment.flags)
    seq = f"seq={segment.seq}"
    ack = f"ack={segment.ack}" if segment.ack is not None else ""
    length = f"len={segment.length}" if segment.length else ""
    tfo = ""
    if segment.cookie is not None:
        tfo = "TFO req" if segment.cookie.length == 0 else "TFO cookie"
    lost = "lost" if segment.lost else ""  # what happened to it stays to the last
    steps = [
        [flags, seq, ack, length, tfo, lost],
        [flags, ack, length, tfo, lost],
        [flags, length, tfo, lost],
        [flags, length, lost],
    ]
    variants: list[str] = []
    for fields in steps:
        text = prefix + " ".join(f for f in fields if f)
        if text not in variants:
            variants.append(text)
    return variants


def option_variants(segment: Segment) -> list[str]:
    """A SYN's options line (full, then compact), or [] for other segments."""
    if "SYN" not in segment.flags:
        return []
    options = [o for o in segment.options if not isinstance(o, FastOpen)]
    if not options:
        return []
    full = " ".join(o.label() for o in options)
    compact = " ".join(_compact(o) for o in options)
    return [full] if full == compact else [full, compact]


def _compact(option: TcpOption) -> str:
    if isinstance(option, SackPermitted):
        return "sack"
    if isinstance(option, WindowScale):
        return f"ws {option.shift}"
    return option.label()


_SIDE_PREFIX = re.compile(r"^(client|server):?\s+")


def note_text(text: str) -> str:
    return "• " + _SIDE_PREFIX.sub("", text)


_CLAUSE_END = re.compile(r"(?=: |; |, | \(| — )")


def note_heads(text: str) -> list[str]:
    """Shorter forms of a note, longest first: the text up to the end of a clause
    (before ": ", "; ", ", ", " (" or " — "), at least 12 characters long."""
    heads = {text[: m.start()] for m in _CLAUSE_END.finditer(text) if m.start() >= 12}
    return sorted(heads, key=len, reverse=True)


def side_lines(text: str, width: int, *, is_note: bool = False) -> list[str]:
    """A side text wrapped into `width` columns: at most MAX_TEXT_LINES (MAX_NOTE_LINES) lines."""
    width = max(width, 4)
    most = MAX_NOTE_LINES if is_note else MAX_TEXT_LINES
    lines = textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False) or [""]
    if len(lines) <= most:
        return lines
    if is_note:
        for head in note_heads(text):
            short = textwrap.wrap(head, width, break_on_hyphens=False, break_long_words=False)
            if len(short) <= most:
                return short
    lines = lines[:most]
    lines[-1] = cut(lines[-1] + " …", width) if len(lines[-1]) + 2 > width else lines[-1] + " …"
    return lines
