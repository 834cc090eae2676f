"""A second settings space for the differential fuzzer: realistic values and the domain's edges.

`space.py` draws every whole number from its edges, a uniform draw or a
log-uniform one over its whole range, so a size is most often hundreds of
kilobytes (refused: beyond the initial congestion window) and an MTU most
often one no link has. This space aims where the model's domain ends:

- Every field still comes from ScenarioConfig's declaration (LIMITS, CHOICES,
  bool), never from a list written here; a new setting is drawn the day it is
  declared. HINTS only adds realistic values for fields known today (an MTU
  from the links that exist); a field without a hint gets the generic draw.
- Base settings are the lab scenario's own (`lab.scenario(name).config`): a
  numeric draw may be that default, and a size is drawn around the MSS in use
  at the case's MTU (one segment, the initial congestion window of 10 and
  either side of them), else log-uniform over 1 to 1,000,000 bytes.
- A hexadecimal field (a bit mask) is an OR of a few single bits in range.
- One-way delay: 0, fractional values mostly in 0-100 ms, the UI's presets,
  where a round trip meets the 1 s SYN timers (500 ms, either side) and up to
  MAX_DELAY_MS; 1 to 5
  iterations.
- The same seed gives the same cases.

As a script it is report.py with `--space realistic` (same flags, figures
and JSON, each field's drawn range included):

    python tests/fuzz/realistic.py --seed S --cases N
        [--backend auto|netem|nfqueue] [--budget-s T] [--no-shrink] [--json FILE]
The shrinker here (`shrink_all`) adds to differential.shrink a pass that
moves each numeric setting toward its lab default while the case fails the
same way (same kind, same first sentence once numbers are blanked).
"""

from __future__ import annotations

import functools
import math
import random
import re
import sys
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `tests` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fuzz import differential, space
from tests.fuzz.differential import Outcome
from tests.fuzz.space import Case, draw_drops, setting_names
from tfolab.lab.catalog import Lab, load_labs
from tfolab.model.domain import TCP_TIMEOUT_INIT_MS, mss_in_use
from tfolab.model.pacing import TCP_INIT_CWND
from tfolab.model.scenario import (
    _HEXADECIMAL,
    _UNITS,
    CHOICES,
    LIMITS,
    MAX_DELAY_MS,
    ScenarioConfig,
)

MAX_OVERRIDES = 5
MAX_CASE_ITERATIONS = 5
# Realistic values where a field has them (the generic draw covers the rest).
HINTS: dict[str, tuple[int, ...]] = {"mtu": (128, 576, 1280, 1500, 9000, 65536)}
# One-way delays a class uses: the UI's presets and the round numbers of the README.
PRESET_DELAYS = (0.25, 1.0, 10.0, 15.0, 75.0, 300.0)
# Either side of where a round trip 2D meets the SYN's 1 s timer, and 3D a Fast Open
# child's SYN-ACK timer at D + 1 s (syn_timer.py, synack_timer.py).
TIMER_EDGE_MS = TCP_TIMEOUT_INIT_MS / 2
EDGE_DELAYS = (TIMER_EDGE_MS - 0.5, TIMER_EDGE_MS, TIMER_EDGE_MS + 0.5)


def is_size(name: str) -> bool:
    """A byte count the application writes (not the MTU, which sets the segment size)."""
    return _UNITS.get(name) == "bytes" and name not in HINTS


def draw_number(rng: random.Random, name: str, default: int, mss: int) -> int:
    low, high = LIMITS[name]
    how = rng.random()
    if name in HINTS and how < 0.6:
        number = rng.choice(HINTS[name])
    elif name in _HEXADECIMAL:
        bits = [1 << i for i in range(high.bit_length()) if 1 << i <= high]
        number = default if how < 0.3 else 0
        for bit in rng.sample(bits, rng.randint(0, 3)):
            number |= bit
        if how < 0.1:
            number = rng.choice((low, high))
    elif is_size(name) and how < 0.5:  # around the segment and the initial window
        base = rng.choice((1, 2, TCP_INIT_CWND - 1, TCP_INIT_CWND, TCP_INIT_CWND + 1)) * mss
        number = base + rng.choice((-1, 0, 1, rng.randint(-mss // 2, mss // 2)))
    elif how < 0.62:
        number = rng.choice((low, min(low + 1, high), max(high - 1, low), high))
    elif how < 0.72:
        number = default
    elif how < 0.82:
        number = rng.randint(low, min(high, low + 10))
    else:  # log-uniform over the range (a size: 1 to 1,000,000 bytes)
        number = round(math.exp(rng.uniform(math.log(low + 1), math.log(high + 1)))) - 1
    return min(max(number, low), high)


def render(name: str, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if name in _HEXADECIMAL and isinstance(value, int):
        return hex(value)
    return str(value)


def draw_value(rng: random.Random, name: str, base: ScenarioConfig, mtu: int) -> str:
    default = getattr(base, name)
    if name in LIMITS:
        return render(name, draw_number(rng, name, default, mss_in_use(mtu)))
    if name in CHOICES:
        return rng.choice(CHOICES[name])
    if isinstance(default, bool):
        return render(name, rng.random() < 0.5)
    if name == "drop":
        return draw_drops(rng)
    raise TypeError(f"setting {name} has no declared range, choices or bool type")


def draw_delay(rng: random.Random) -> float:
    how = rng.random()
    if how < 0.15:
        return 0.0
    if how < 0.6:
        return round(rng.uniform(0, 100), rng.choice((0, 1, 2)))
    if how < 0.75:
        return rng.choice(PRESET_DELAYS)
    if how < 0.8:
        return rng.choice(EDGE_DELAYS)
    if how < 0.9:
        return round(math.exp(rng.uniform(math.log(0.01), math.log(MAX_DELAY_MS))), 2)
    return round(rng.uniform(100, MAX_DELAY_MS), 2)


def draw(rng: random.Random, labs: list[Lab]) -> Case:
    lab = rng.choice(labs)
    scenario = rng.choice(lab.scenarios)
    base = scenario.config
    names = sorted(rng.sample(setting_names(), rng.randint(0, MAX_OVERRIDES)))
    # The MTU first: the sizes are drawn around the MSS it gives.
    mtu = base.mtu
    settings: dict[str, str] = {}
    if "mtu" in names:
        settings["mtu"] = draw_value(rng, "mtu", base, mtu)
        mtu = int(settings["mtu"])
    for name in names:
        if name not in settings:
            settings[name] = draw_value(rng, name, base, mtu)
    return Case(
        lab.name,
        scenario.name,
        tuple(sorted(settings.items())),
        draw_delay(rng),
        rng.randint(1, MAX_CASE_ITERATIONS),
    )


def realistic_cases(seed: int, count: int) -> list[Case]:
    return space.cases(seed, count, draw)


# --- shrinking numbers toward the lab's default --------------------------------


def shape(outcome: Outcome) -> str:
    """The outcome's kind and first sentence, numbers blanked: 'the same way'."""
    first = outcome.detail[0] if outcome.detail else ""
    return outcome.kind + ": " + re.sub(r"\d+(\.\d+)?", "N", first)


@functools.cache
def _scenario_config(lab_name: str, scenario: str) -> ScenarioConfig:
    lab = next(lab for lab in load_labs() if lab.name == lab_name)
    return lab.scenario(scenario).config


def lab_default(case: Case, name: str) -> object:
    return getattr(_scenario_config(case.lab, case.scenario), name)


def _toward_default(case: Case) -> list[Case]:
    """Each numeric override moved to its lab default, then halfway there."""
    out = []
    for name, raw in case.settings:
        if name not in LIMITS:
            continue
        value, default = int(raw, 0), lab_default(case, name)
        assert isinstance(default, int)
        for moved in (default, (value + default) // 2):
            if moved != value:
                settings = dict(case.settings)
                settings[name] = render(name, moved)
                out.append(case.replace(settings=tuple(settings.items())))
    return out


def shrink_all(
    case: Case, failed: Outcome, backend: str = "auto", *, timing: bool = True
) -> tuple[Case, Outcome, int]:
    """differential.shrink, then numbers toward the lab default, within MAX_SHRINK_RUNS."""
    best, best_outcome, runs = differential.shrink(case, failed, backend, timing=timing)
    wanted = shape(failed)
    best, best_outcome, runs = differential.shrink(
        best,
        best_outcome,
        backend,
        timing=timing,
        simpler=_toward_default,
        same=lambda outcome: shape(outcome) == wanted,
        runs=runs,
    )
    print(f"  shrunk in {runs} runs: {best.command()}", flush=True)
    return best, best_outcome, runs


# --- the figures: each field's drawn range -------------------------------------


def field_ranges(drawn: list[Case]) -> dict[str, object]:
    """Per field: how often it was set and the values drawn (a range, or counts)."""
    values: dict[str, list[str]] = {name: [] for name in setting_names()}
    for case in drawn:
        for name, raw in case.settings:
            values[name].append(raw)
    out: dict[str, object] = {}
    for name, raws in values.items():
        if name in LIMITS and raws:
            numbers = sorted(int(raw, 0) for raw in raws)
            out[name] = {
                "set": len(raws),
                "min": numbers[0],
                "median": numbers[len(numbers) // 2],
                "max": numbers[-1],
                "declared": list(LIMITS[name]),
            }
        else:
            out[name] = {"set": len(raws), "values": dict(Counter(raws).most_common())}
    delays = sorted(case.delay_ms for case in drawn)
    out["--delay"] = {
        "min": delays[0] if delays else None,
        "median": delays[len(delays) // 2] if delays else None,
        "max": delays[-1] if delays else None,
        "zero": delays.count(0.0),
        "fractional": sum(1 for d in delays if d != int(d)),
        "over_100": sum(1 for d in delays if d > 100),
        "declared": [0.0, MAX_DELAY_MS],
    }
    out["--iterations"] = dict(sorted(Counter(case.iterations for case in drawn).items()))
    out["lab/scenario"] = dict(Counter(f"{c.lab}/{c.scenario}" for c in drawn).most_common())
    return out


def print_ranges(ranges: dict[str, object]) -> None:
    print("\ndrawn, per field:")
    for name, drawn in ranges.items():
        print(f"  {name:32} {drawn}")


if __name__ == "__main__":
    from tests.fuzz import report

    sys.exit(report.main(sys.argv[1:], space="realistic"))
