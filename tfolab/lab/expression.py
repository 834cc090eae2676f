"""A student's prediction of a time: "40", "4D", "2 RTT", "4D+40", "2RTT + 40ms".

Rules:
- Pure: text in, an Expression out (or ExpressionError with one line saying
  what is wrong and an example). No I/O.
- The grammar is a sum of terms joined by + or -: a term is a number of
  milliseconds ("40", "40ms", "40 ms"), or a multiple of D (the one-way delay)
  or of RTT (= 2D): "4D", "4 D", "4*D", "4xD" (or the times sign), "D", "2 RTT", "2RTTs".
  Case and spaces do not matter. Nothing else (no brackets, no seconds).
- An Expression is linear in D: `ms_at(D) = d * D + ms`. It keeps the
  student's text, and `words()` gives a canonical form ("4D + 40 ms") that
  parses back to the same Expression.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_LENGTH = 80
MAX_MAGNITUDE = 1e6  # no coefficient or constant beyond this (a typo, not a prediction)
EXAMPLES = "e.g. 40, 4D, 2 RTT, 4D+40 or 2RTT + 40ms"

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<number>\d+(?:\.\d*)?|\.\d+)
  | (?P<rtt>rtts?\b|rtts?(?=[^a-z]|$))
  | (?P<ms>ms\b|ms(?=[^a-z]|$))
  | (?P<d>d\b|d(?=[^a-z]|$))
  | (?P<times>[*x\u00d7])
  | (?P<sign>[+\-\u2212])
    """,
    re.VERBOSE | re.IGNORECASE,
)


class ExpressionError(ValueError):
    """A prediction that cannot be read; str() is one line with an example."""


@dataclass(frozen=True)
class Expression:
    d: float  # coefficient of the one-way delay D (RTT counts 2)
    ms: float  # constant milliseconds
    text: str = ""  # as the student typed it

    def ms_at(self, one_way_delay_ms: float) -> float:
        return self.d * one_way_delay_ms + self.ms

    def words(self) -> str:
        """Canonical: "4D", "4D + 40 ms", "40 ms", "0.5D - 1 ms"."""
        parts: list[str] = []
        if self.d:
            coefficient = {1.0: "", -1.0: "-"}.get(self.d, _num(self.d))
            parts.append(f"{coefficient}D")
        if self.ms or not parts:
            if parts:
                sign = "+" if self.ms > 0 else "-"
                parts.append(f"{sign} {_num(abs(self.ms))} ms")
            else:
                parts.append(f"{_num(self.ms)} ms")
        return " ".join(parts)

    @property
    def uses_delay(self) -> bool:
        return self.d != 0


def _num(value: float) -> str:
    return f"{value:g}" if abs(value) < 1e5 else f"{value:.0f}"


def parse(text: str) -> Expression:
    """The Expression in `text`; ExpressionError (one line) if it is not one."""
    source = text.strip()
    if not source:
        raise ExpressionError(f"no prediction given; write one, {EXAMPLES}")
    if len(source) > MAX_LENGTH:
        raise ExpressionError(f"a prediction of at most {MAX_LENGTH} characters, {EXAMPLES}")
    tokens = _tokens(source)
    d_total, ms_total = 0.0, 0.0
    pos = 0
    first = True
    while pos < len(tokens) or first:
        sign = 1.0
        if pos < len(tokens) and tokens[pos][0] == "sign":
            sign = -1.0 if tokens[pos][1] in "-\u2212" else 1.0
            pos += 1
        elif not first:
            value = tokens[pos][1]
            raise ExpressionError(
                f"expected + or - before {value!r} in {source!r}; write it as {EXAMPLES}"
            )
        first = False
        pos, d, ms = _term(source, tokens, pos)
        d_total += sign * d
        ms_total += sign * ms
    if abs(d_total) > MAX_MAGNITUDE or abs(ms_total) > MAX_MAGNITUDE:
        raise ExpressionError(f"{source!r} is far too large for a time; {EXAMPLES}")
    return Expression(d_total + 0.0, ms_total + 0.0, source)


def _tokens(source: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(source):
        match = _TOKEN.match(source, pos)
        if match is None or match.end() == pos:
            raise ExpressionError(
                f"cannot read {source[pos : pos + 12]!r} in {source!r}: use numbers, D, RTT, ms, "
                f"+ and -, {EXAMPLES}"
            )
        kind = match.lastgroup or ""
        if kind != "space":
            tokens.append((kind, match.group()))
        pos = match.end()
    return tokens


def _term(source: str, tokens: list[tuple[str, str]], pos: int) -> tuple[int, float, float]:
    """One term from tokens[pos]: (next position, D coefficient, constant ms)."""
    if pos >= len(tokens):
        raise ExpressionError(f"{source!r} ends with an operator; {EXAMPLES}")
    kind, value = tokens[pos]
    factor = 1.0
    if kind == "number":
        factor = float(value)
        pos += 1
        if pos < len(tokens) and tokens[pos][0] == "times":
            pos += 1
            if pos >= len(tokens) or tokens[pos][0] not in ("d", "rtt"):
                raise ExpressionError(
                    f"in {source!r}, a number can be multiplied only by D or RTT; {EXAMPLES}"
                )
        if pos < len(tokens) and tokens[pos][0] == "ms":
            return pos + 1, 0.0, factor
        if pos >= len(tokens) or tokens[pos][0] not in ("d", "rtt"):
            return pos, 0.0, factor
        kind, value = tokens[pos]
    if kind == "d":
        return pos + 1, factor, 0.0
    if kind == "rtt":
        return pos + 1, 2 * factor, 0.0
    raise ExpressionError(f"unexpected {value!r} in {source!r}; {EXAMPLES}")
