"""The differential fuzzer's settings space: seeded random cases over the whole schema.

Rules:
- Every field of ScenarioConfig is drawn from its own declaration (LIMITS,
  CHOICES, bool), never from a list written here, so a new setting is fuzzed
  the day it is declared; a setting with its own parser (the drops) is drawn
  from its own type (draw_drops). Whole numbers come from their edges, a uniform draw
  or a log-uniform one (sizes in bytes spread over every order of magnitude).
- A case is a lab, one of its scenarios, 0 to 5 overridden settings, a
  one-way delay from 0 to MAX_DELAY_MS (a quarter of cases at 0, most on a log
  scale up to the limit) and 1 to 4 iterations.
- The same seed gives the same cases, on every machine.
- A case renders as the one `tfolab run` command that reproduces it.
"""

from __future__ import annotations

import dataclasses
import math
import random
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from tfolab.lab.catalog import Lab, load_labs
from tfolab.model.drops import MAX_DROP_INDEX, Drop, Sender, label, parse_drops
from tfolab.model.scenario import CHOICES, LIMITS, MAX_DELAY_MS, ScenarioConfig

MAX_OVERRIDES = 5
MAX_CASE_ITERATIONS = 4


@dataclass(frozen=True)
class Case:
    lab: str
    scenario: str
    settings: tuple[tuple[str, str], ...]
    delay_ms: float
    iterations: int

    def args(self, command: str = "run") -> list[str]:
        out = [command, self.lab, "--scenario", self.scenario, "--delay", f"{self.delay_ms:g}"]
        out += ["--iterations", str(self.iterations)]
        for key, value in self.settings:
            out += ["--set", f"{key}={value}"]
        return out

    def command(self) -> str:
        return "tfolab " + shlex.join(self.args())

    def replace(self, **changes: object) -> Case:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


def setting_names() -> list[str]:
    return [f.name for f in dataclasses.fields(ScenarioConfig)]


def draw_value(rng: random.Random, name: str) -> str:
    """One value for setting `name`, as `--set` takes it."""
    if name in LIMITS:
        low, high = LIMITS[name]
        how = rng.random()
        if how < 0.15:
            number = low
        elif how < 0.25:
            number = high
        elif how < 0.6:
            number = rng.randint(low, high)
        else:  # log-uniform: every order of magnitude as likely
            number = round(math.exp(rng.uniform(math.log(low + 1), math.log(high + 1)))) - 1
            number = min(max(number, low), high)
        return str(number)
    if name in CHOICES:
        return rng.choice(CHOICES[name])
    if name == "drop":
        return draw_drops(rng)
    return rng.choice(("true", "false"))


def draw_drops(rng: random.Random) -> str:
    """A `drop` value: half of them one side's first packets in a row (lost SYNs or
    SYN-ACKs, which the model follows), the rest any packets of either side, some in one
    iteration only."""
    if rng.random() < 0.5:
        side = rng.choice(("client", "client", "server"))
        lost = rng.choice((1, 1, 1, 2, 2, 3))
        at = f"@{rng.randint(1, 3)}" if rng.random() < 0.25 else ""
        return ",".join(f"{side}:{n}{at}" for n in range(1, lost + 1))
    drops: list[Drop] = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        sender: Sender = "client" if rng.random() < 0.6 else "server"
        index = rng.choice((1, 2, 3, 4, 5, 6, 7, 8, rng.randint(1, MAX_DROP_INDEX)))
        iteration = rng.randint(1, 3) if rng.random() < 0.25 else 0
        drop = Drop(sender, index, iteration)
        try:
            parse_drops(label((*drops, drop)))
        except ValueError:
            continue  # names a packet already named
        drops.append(drop)
    return label(tuple(drops))


def draw_delay(rng: random.Random) -> float:
    how = rng.random()
    if how < 0.25:
        return 0.0
    if how < 0.85:
        return round(math.exp(rng.uniform(math.log(0.1), math.log(MAX_DELAY_MS))), 2)
    return round(rng.uniform(0, MAX_DELAY_MS), 2)


def draw(rng: random.Random, labs: list[Lab]) -> Case:
    lab = rng.choice(labs)
    scenario = rng.choice(lab.scenarios)
    names = rng.sample(setting_names(), rng.randint(0, MAX_OVERRIDES))
    settings = tuple((name, draw_value(rng, name)) for name in sorted(names))
    return Case(
        lab.name,
        scenario.name,
        settings,
        draw_delay(rng),
        rng.randint(1, MAX_CASE_ITERATIONS),
    )


Draw = Callable[[random.Random, list[Lab]], Case]


def cases(seed: int, count: int, draw_one: Draw = draw) -> list[Case]:
    """`count` cases from `seed`, each from `draw_one` (this space's, or another's)."""
    rng = random.Random(seed)
    labs = sorted(load_labs(), key=lambda lab: lab.name)
    return [draw_one(rng, labs) for _ in range(count)]
