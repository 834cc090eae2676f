"""What a student asked for, checked once and frozen: a LabPlan.

Rules:
- `plan()` turns the choices (a lab, one scenario or all, iterations, settings
  as typed, a delay) into a LabPlan or raises UserError before anything
  starts: every setting typed through the one scenario schema
  (model/scenario.py) and every combination checked (ScenarioConfig.check).
- Nothing after a plan checks it again; what only a real run needs checked
  is lab/run_plan.py's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tfolab.core.errors import UserError
from tfolab.lab.catalog import Lab
from tfolab.model.scenario import (
    MAX_DELAY_MS,
    MAX_ITERATIONS,
    ScenarioConfig,
    SettingError,
    parse_settings,
)

REPLAY_MIN_ITERATIONS = 2


@dataclass(frozen=True)
class PlannedScenario:
    name: str
    summary: str
    iterations: int
    config: ScenarioConfig


@dataclass(frozen=True)
class LabPlan:
    """A lab's scenarios to simulate or run, every setting typed and checked."""

    lab: Lab
    scenarios: tuple[PlannedScenario, ...]
    delay_ms: float


def plan(
    lab: Lab,
    scenario: str | None = None,
    iterations: int | None = None,
    settings: Mapping[str, str] | None = None,
    *,
    delay_ms: float = 10.0,
) -> LabPlan:
    """The scenarios to run, with every setting and combination checked (UserError if not)."""
    chosen = [lab.scenario(scenario)] if scenario else list(lab.scenarios)
    if iterations is not None and (
        not isinstance(iterations, int)
        or isinstance(iterations, bool)
        or not 1 <= iterations <= MAX_ITERATIONS
    ):
        raise UserError(f"--iterations {iterations} is out of range", f"give 1 to {MAX_ITERATIONS}")
    if not 0 <= delay_ms <= MAX_DELAY_MS:
        raise UserError(
            f"delay {delay_ms:g} ms is out of range", f"give 0 to {MAX_DELAY_MS:g} ms one way"
        )
    try:
        typed = parse_settings(dict(settings or {}))
    except SettingError as err:
        raise UserError(str(err), "see `tfolab list` and the lab's guide") from None
    planned = []
    for lab_scenario in chosen:
        config = lab_scenario.config.with_typed(typed)
        try:
            config.check()
        except SettingError as err:
            where = f"scenario {lab_scenario.name}: " if len(chosen) > 1 else ""
            raise UserError(
                f"{where}{err}", "change or drop that --set; see the lab's guide"
            ) from None
        count = iterations or lab_scenario.iterations
        if config.replay_syn:
            count = max(count, REPLAY_MIN_ITERATIONS)  # something to replay, then the replay
        planned.append(PlannedScenario(lab_scenario.name, lab_scenario.summary, count, config))
    if not planned:
        raise UserError("no scenario to run", "see `tfolab list`")
    return LabPlan(lab, tuple(planned), delay_ms)
