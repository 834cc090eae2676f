"""A third settings space for the differential fuzzer: big answers read whole (the window model).

The other spaces seldom combine what the window model needs: read_whole on, an
answer of more than the initial congestion window, an MTU in its range and a
delay. This one always does the first two and aims the rest at the window
domain's edges (model/domain.py: WHOLE_ANSWER_MTUS, MAX_WHOLE_ANSWER_SEGMENTS,
MIN_WHOLE_ANSWER_DELAY_MS), so its figures say how far the window model holds:

- A case is a lab scenario with read_whole = true and response_bytes drawn
  either side of the initial window (10 segments at the case's MTU) and of
  the segment limit, else log-uniform from one segment to the schema's limit;
  the MTU comes from realistic.HINTS, the domain's MTU edges, or the schema's
  range; 0 to 3 further overrides from the realistic space's draws.
- Delays and iterations as in the realistic space (its edges included), so
  kept connections, D = 0 and the handshake's limit are drawn and refused.
- The same seed gives the same cases. Failing cases shrink as realistic ones do.

As a script it is report.py with `--space windows`.
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `tests` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fuzz import realistic, space
from tests.fuzz.space import Case, setting_names
from tfolab.lab.catalog import Lab
from tfolab.model.domain import MAX_WHOLE_ANSWER_SEGMENTS, WHOLE_ANSWER_MTUS, mss_in_use
from tfolab.model.pacing import TCP_INIT_CWND
from tfolab.model.scenario import LIMITS

MAX_OTHER_OVERRIDES = 3
FIXED = ("read_whole", "response_bytes", "mtu")


def draw_mtu(rng: random.Random) -> int:
    low, high = LIMITS["mtu"]
    how = rng.random()
    if how < 0.6:
        return rng.choice(realistic.HINTS["mtu"])
    if how < 0.8:
        edge = rng.choice(WHOLE_ANSWER_MTUS)
        return min(max(edge + rng.choice((-1, 0, 1)), low), high)
    return rng.randint(low, high)


def draw_answer(rng: random.Random, mtu: int) -> int:
    low, high = LIMITS["response_bytes"]
    mss = mss_in_use(mtu)
    how = rng.random()
    if how < 0.3:
        segments = rng.choice((TCP_INIT_CWND, TCP_INIT_CWND + 1, 2 * TCP_INIT_CWND))
        number = segments * mss + rng.choice((-1, 0, 1))
    elif how < 0.45:
        number = MAX_WHOLE_ANSWER_SEGMENTS * mss + rng.choice((-1, 0, 1, mss))
    else:
        number = round(math.exp(rng.uniform(math.log(mss), math.log(high + 1)))) - 1
    return min(max(number, max(low, 1)), high)


def draw(rng: random.Random, labs: list[Lab]) -> Case:
    lab = rng.choice(labs)
    scenario = rng.choice(lab.scenarios)
    base = scenario.config
    mtu = draw_mtu(rng)
    settings = {
        "read_whole": "true",
        "mtu": str(mtu),
        "response_bytes": str(draw_answer(rng, mtu)),
    }
    others = [n for n in setting_names() if n not in FIXED]
    for name in sorted(rng.sample(others, rng.randint(0, MAX_OTHER_OVERRIDES))):
        settings[name] = realistic.draw_value(rng, name, base, mtu)
    return Case(
        lab.name,
        scenario.name,
        tuple(sorted(settings.items())),
        realistic.draw_delay(rng),
        rng.randint(1, realistic.MAX_CASE_ITERATIONS),
    )


def windows_cases(seed: int, count: int) -> list[Case]:
    return space.cases(seed, count, draw)


if __name__ == "__main__":
    from tests.fuzz import report

    sys.exit(report.main(sys.argv[1:], space="windows"))
