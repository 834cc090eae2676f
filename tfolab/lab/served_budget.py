"""What one served session may ask of the machine's measurement slots.

A terminal's user owns their machine's time; a class shares it. In a served
session (`tfolab serve` names itself in TFOLAB_SERVED_BY, runner.served_class):

Rules:
- A run is checked whole before it starts: the model's predicted time of
  every iteration, plus ITERATION_OVERHEAD_S each, must fit RUN_BUDGET_S.
- A bench is checked whole before it starts: its expected time in the
  slots (lab.bench.expected_run_s over every delay, server, mode and round)
  must fit BENCH_BUDGET_S.
- Whatever the estimate said, one runner holds a slot at most HOLD_CAP_S:
  then it is killed (its slot is free at once) and the session says why.
- Outside a served session nothing here applies.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from tfolab.core.errors import UserError
from tfolab.runner.served_class import SERVED_BY_ENV

if TYPE_CHECKING:
    from tfolab.lab.bench_plan import BenchPlan
    from tfolab.lab.results import LabResult

RUN_BUDGET_S = 60.0
BENCH_BUDGET_S = 120.0
HOLD_CAP_S = 240.0
ITERATION_OVERHEAD_S = 0.02


def served() -> bool:
    return bool(os.environ.get(SERVED_BY_ENV))


def hold_cap_s() -> float | None:
    return HOLD_CAP_S if served() else None


def run_seconds(predicted: LabResult) -> float:
    measurements = [m for s in predicted.scenarios for m in s.measurements]
    return sum(m.predicted_ms / 1000 + ITERATION_OVERHEAD_S for m in measurements)


def check_run(predicted: LabResult) -> None:
    if not served():
        return
    needed = run_seconds(predicted)
    if needed > RUN_BUDGET_S:
        raise UserError(
            f"this run would hold a measurement slot for about {needed:.0f} s; a served "
            f"session's run may take {RUN_BUDGET_S:g} s",
            "ask for fewer iterations or a smaller delay",
        )


def bench_seconds(plan: BenchPlan) -> float:
    from tfolab.lab.bench import MODES, expected_run_s, rounds_for

    per_delay = (expected_run_s(plan, d) * rounds_for(d) for d in plan.delays)
    return sum(per_delay) * len(plan.servers) * len(MODES)


def check_bench(plan: BenchPlan) -> None:
    if not served():
        return
    needed = bench_seconds(plan)
    if needed > BENCH_BUDGET_S:
        raise UserError(
            f"this bench would hold the measurement slots for about {needed:.0f} s; a served "
            f"session's bench may take {BENCH_BUDGET_S:g} s",
            "ask for fewer requests or delays, smaller delays, or more concurrency",
        )
