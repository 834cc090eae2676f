"""What a student asked for, checked once and frozen: a LabPlan, and a RunPlan to run it.

Rules:
- `plan()` turns the choices (a lab, one scenario or all, iterations, settings
  as typed, a delay) into a LabPlan or raises UserError before anything
  starts: every setting typed through the one scenario schema
  (model/scenario.py) and every combination checked (ScenarioConfig.check).
- `for_real()` adds what only a real run needs checked, still before any
  process or namespace exists: the backend, the machine-wide slots, what a
  real run cannot honour, the model's domain on that backend (TCP Small
  Queues on NFQUEUE) and a served session's budget. It keeps the model's
  prediction those checks read; the run predicts again only with what the
  runner measured (the delay that really ran, the segment truesize).
- Nothing after a plan checks it again.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tfolab.core import native
from tfolab.core.errors import UserError
from tfolab.core.slots import SlotTable
from tfolab.lab import served_budget
from tfolab.lab.catalog import Lab
from tfolab.model.domain import gso_packets_per_burst
from tfolab.model.scenario import (
    MAX_DELAY_MS,
    MAX_ITERATIONS,
    ScenarioConfig,
    SettingError,
    parse_settings,
)
from tfolab.runner.backends import BACKEND_CHOICES, BACKENDS, likely_backend

if TYPE_CHECKING:  # lab.results imports this module for PlannedScenario
    from tfolab.lab.results import LabResult

PINGPONG_SYSCTL = "/proc/sys/net/ipv4/tcp_pingpong_thresh"
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


@dataclass(frozen=True)
class RunPlan:
    """A LabPlan a real run may start: its backend checked, the model's prediction kept."""

    plan: LabPlan
    backend: str  # as asked: auto, netem, nfqueue or none
    prediction: LabResult  # the model's, on the backend the run will most likely get


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


def for_real(lab_plan: LabPlan, backend: str) -> RunPlan:
    """What a real run would refuse after its network is up, refused before anything starts."""
    from tfolab.lab.prediction import predict

    if backend not in BACKEND_CHOICES:
        raise UserError(
            f"unknown backend {backend!r}", f"pick one of: {', '.join(BACKEND_CHOICES)}"
        )
    likely = likely_backend(backend, lab_plan.delay_ms, native.optional_executable("tfo-delay"))  # type: ignore[arg-type]
    SlotTable.open()  # the machine-wide measurement slots are usable (and agree on N)
    configs = [p.config for p in lab_plan.scenarios]
    if any(c.fastopen_queue_full for c in configs):
        raise UserError(
            "fastopen_queue_full is a model-only setting: a real run cannot fill the server's "
            "Fast Open queue, so the kernel would accept the SYN's data",
            "see it with `tfolab simulate`, or drop that --set",
        )
    if any(c.pingpong_thresh != 1 for c in configs) and not os.path.exists(PINGPONG_SYSCTL):
        raise UserError(
            "this kernel has no net.ipv4.tcp_pingpong_thresh sysctl",
            "drop the pingpong_thresh setting (the sysctl exists since Linux 6.7; "
            "before, the threshold is built in)",
        )
    prediction = predict(lab_plan, backend=likely)
    _check_small_queues(prediction, likely)
    served_budget.check_run(prediction)  # a served session's run fits the class's budget
    return RunPlan(lab_plan, backend, prediction)


def _check_small_queues(prediction: LabResult, backend: str) -> None:
    """A backend that keeps queued skbs charged: refuse a write of more than two GSO packets.

    TCP Small Queues (tcp_small_queue_check) then holds the third until the
    first leaves the delayer's queue, D later: a wait the model, which is
    netem's link, does not have (domain.py).
    """
    if not BACKENDS[backend].autocorking_off:  # netem orphans the skb; no delay, no wait
        return
    for scenario in prediction.scenarios:
        packets_at_once = gso_packets_per_burst(scenario.simulation.events)
        if packets_at_once > 2:
            raise UserError(
                f"scenario {scenario.planned.name}: outside the model's domain on the "
                f"{backend} backend: one write leaves as {packets_at_once} GSO packets, and "
                "with the packets held in NFQUEUE still charged to the socket TCP Small "
                "Queues (tcp_small_queue_check) holds the third until the first leaves "
                "the queue; needs the TSQ model",
                "use --backend netem where the kernel has it, or a smaller request or MTU",
            )
