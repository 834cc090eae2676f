"""A lab guide with its answers behind a reveal.

The guide format is plain Markdown (tfolab/lab/labs/*.md): each question is a
bold paragraph and its answer the block quote under it whose text begins with
"Answer:" (`> Answer: ...`, continued on further `>` lines). The files stay
readable as they are in any Markdown reader and on the command line; only the
UI hides the answers until the student asks for them.

Rules: pure text in, text out. A block quote that does not begin with
"Answer" is left alone.
"""

from __future__ import annotations

import re

_ANSWER = re.compile(r"^>\s*(\*\*|_)?answer\b", re.IGNORECASE)
HIDDEN = "> *Answer hidden: predict first, then press **a** to reveal the answers.*"


def hide_answers(markdown: str) -> tuple[str, int]:
    """The guide with every answer block replaced by a hidden marker, and how many there were."""
    out: list[str] = []
    hidden = 0
    inside = False
    for line in markdown.splitlines():
        if inside and line.startswith(">"):
            continue
        inside = False
        if _ANSWER.match(line):
            inside = True
            hidden += 1
            out.append(HIDDEN)
            continue
        out.append(line)
    return "\n".join(out) + ("\n" if markdown.endswith("\n") else ""), hidden


def guide_markdown(markdown: str, *, reveal: bool) -> str:
    return markdown if reveal else hide_answers(markdown)[0]
