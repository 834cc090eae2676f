"""What a student predicts in a scenario: its headline quantities.

A quantity is the lab's headline time over some of the scenario's
iterations, named by a selector: "iteration 1", "iterations 2+",
"iterations 2-4", "every iteration". A scenario names its quantities in its
lab file (`predict = ["iteration 1", "iterations 2+"]`); without that key it
asks for "iteration 1" and, when it has more than one iteration,
"iterations 2+" (whether repeats differ is itself the question).

Rules: pure; a selector that does not parse raises ValueError with one line;
quantities whose iterations all lie beyond the planned count are dropped, and
a range is cut at it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SELECTOR = re.compile(
    r"^\s*(?:(?P<every>every iteration)"
    r"|iteration\s+(?P<one>\d+)"
    r"|iterations\s+(?P<from>\d+)\s*(?:(?P<plus>\+)|-\s*(?P<to>\d+)))\s*$",
    re.IGNORECASE,
)
SELECTOR_FORMS = '"iteration 1", "iterations 2+", "iterations 2-4" or "every iteration"'


@dataclass(frozen=True)
class Quantity:
    """The headline over iterations first..last (last None: to the end)."""

    name: str
    first: int
    last: int | None

    def iterations(self, planned: int) -> tuple[int, ...]:
        end = planned if self.last is None else min(self.last, planned)
        return tuple(range(self.first, end + 1))


def parse_selector(text: str) -> Quantity:
    found = _SELECTOR.match(text)
    if found is None:
        raise ValueError(f"cannot read the quantity {text!r}: write {SELECTOR_FORMS}")
    name = " ".join(text.split()).lower()
    if found.group("every"):
        return Quantity(name, 1, None)
    if found.group("one"):
        one = int(found.group("one"))
        if one < 1:
            raise ValueError(f"{text!r}: iterations count from 1")
        return Quantity(name, one, one)
    first = int(found.group("from"))
    last = None if found.group("plus") else int(found.group("to"))
    if first < 1 or (last is not None and last < first):
        raise ValueError(f"{text!r}: give iterations from 1 upwards, the first before the last")
    return Quantity(name, first, last)


def default_selectors(planned: int) -> tuple[str, ...]:
    return ("iteration 1", "iterations 2+") if planned > 1 else ("iteration 1",)


def quantities_for(selectors: tuple[str, ...], planned: int) -> tuple[Quantity, ...]:
    """The quantities to ask for when `planned` iterations run (defaults if none named)."""
    chosen = selectors or default_selectors(planned)
    quantities = [parse_selector(text) for text in chosen]
    return tuple(q for q in quantities if q.iterations(planned))
