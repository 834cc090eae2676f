"""A lab run: the model's prediction beside every measurement, built from the runner's events.

Rules:
- `run()` takes a RunPlan (tfolab.lab.plan: checked once, before anything
  started) and streams the runner's events into one LabResult; nothing is
  checked or planned again here.
- One handler per runner event builds the result (`_ResultBuilder`); the front
  ends see lab-level Progress (tfolab.lab.progress), never the runner's wire.
- The prediction the result carries is made again on the runner's Setup only
  because the runner measured what the model needs (the delay that ran, the
  segment truesize, its scheduling); the plan's own prediction stands until then.
- A scenario the machine disturbed (tfolab.lab.repeats: every miss late, about
  time alone, and explained by the lab's wait for a CPU) is measured once more
  by a runner of its own; its result replaces the first, and the evidence is
  kept in LabResult.repeats and told as a RunNote.
- No printing and no UI here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from tfolab.core.errors import UserError
from tfolab.lab import counters as counter_check
from tfolab.lab import served_budget
from tfolab.lab.plan import PlannedScenario
from tfolab.lab.prediction import predict
from tfolab.lab.progress import (
    InLine,
    IterationMeasured,
    LabReady,
    Measuring,
    Progress,
    RunNote,
    ScenarioRunning,
)
from tfolab.lab.repeats import disturbed
from tfolab.lab.results import LabResult, ScenarioResult
from tfolab.lab.run_plan import RunPlan
from tfolab.runner import client
from tfolab.runner.protocol import (
    Captured,
    Counters,
    Done,
    Event,
    Failed,
    Iteration,
    Job,
    JobScenario,
    Note,
    ScenarioStarted,
    Setup,
    SlotTaken,
    SlotWait,
)

OnProgress = Callable[[Progress], None]


async def run(run_plan: RunPlan, on_progress: OnProgress | None = None) -> LabResult:
    """Run the plan for real and grade every measurement against the model's band."""
    tell = on_progress or (lambda _progress: None)
    result = await _measure(run_plan, run_plan.plan.scenarios, tell)
    for index, scenario in enumerate(list(result.scenarios)):
        evidence = disturbed(scenario, result.delayer_late_max_ms)
        if evidence is None:
            continue
        tell(RunNote(evidence.words()))
        again = await _measure(run_plan, (scenario.planned,), tell)
        result.scenarios[index] = again.scenarios[0]
        result.repeats.append(evidence)
        if again.slot_wait_ms is not None:
            result.slot_wait_ms = (result.slot_wait_ms or 0.0) + again.slot_wait_ms
    return result


# A call of the native client may take as long as the model's whole scenario (a lossy
# 1 MB answer at D = 1000 ms read whole: over 20 s), twice over, and a floor beyond.
CALL_TIMEOUT_FLOOR_MS = 10_000


def call_timeout_ms(run_plan: RunPlan, name: str) -> int:
    """The native client's per-call bound for scenario `name`: the floor plus twice the
    model's span of the scenario (its last event), so no valid run times out."""
    spans = [
        max((e.time_ms for e in s.simulation.events), default=0.0)
        for s in run_plan.prediction.scenarios
        if s.planned.name == name
    ]
    return CALL_TIMEOUT_FLOOR_MS + 2 * round(max(spans, default=0.0))


async def _measure(
    run_plan: RunPlan, scenarios: tuple[PlannedScenario, ...], tell: OnProgress
) -> LabResult:
    """One runner for `scenarios`: its events into a LabResult."""
    lab_plan = run_plan.plan
    job = Job(
        lab_plan.lab.name,
        lab_plan.delay_ms,
        run_plan.backend,
        tuple(
            JobScenario(p.name, p.iterations, p.config, call_timeout_ms(run_plan, p.name))
            for p in scenarios
        ),
    )
    builder = _ResultBuilder(run_plan, scenarios, tell)
    async for event in client.stream_events(job, hold_cap_s=served_budget.hold_cap_s()):
        builder.handle(event)
    return builder.result()


class _ResultBuilder:
    """The LabResult, one runner event at a time."""

    def __init__(
        self, run_plan: RunPlan, scenarios: tuple[PlannedScenario, ...], tell: OnProgress
    ) -> None:
        self.run_plan = run_plan
        self.scenarios = scenarios
        self.tell = tell
        self.built: LabResult | None = None
        self.by_name: dict[str, ScenarioResult] = {}

    def handle(self, event: Event) -> None:
        match event:
            case Failed():
                raise UserError(event.reason, event.fix)
            case Setup():
                self._setup(event)
            case SlotWait():
                self.tell(InLine(event.ahead))
            case SlotTaken():
                self._slot_taken(event)
            case ScenarioStarted():
                self.tell(ScenarioRunning(event.name))
            case Note():
                self.tell(RunNote(event.text))
            case Iteration():
                self._iteration(event)
            case Captured():
                self._captured(event)
            case Counters():
                self._counters(event)
            case Done():
                if self.built is not None:
                    self.built.delayer_lateness = event.delayer_lateness

    def result(self) -> LabResult:
        if self.built is None:
            raise UserError("the runner reported no setup", "run `tfolab doctor`")
        return self.built

    def _setup(self, event: Setup) -> None:
        # The delay that really ran: backend "none" adds nothing whatever was asked.
        built = predict(
            dataclasses.replace(self.run_plan.plan, scenarios=self.scenarios),
            backend=event.backend,
            realtime=event.realtime,
            skb_heads=event.skb_heads,
            delay_ms=event.delay_ms,
        )
        built.measured = True
        built.setup_ms = event.setup_ms
        built.kernel_release = event.kernel
        built.notes = list(event.notes)
        built.capture_off = event.capture
        self.built = built
        self.by_name = {s.planned.name: s for s in built.scenarios}
        self.tell(LabReady(event.setup_ms, event.backend, event.namespace, len(built.scenarios)))

    def _slot_taken(self, event: SlotTaken) -> None:
        if self.built is not None:
            self.built.slot_wait_ms, self.built.slots = event.waited_ms, event.slots
        self.tell(Measuring(event.waited_ms))

    def _iteration(self, event: Iteration) -> None:
        scenario = self.by_name.get(event.scenario)
        if scenario is None or not 0 < event.i <= len(scenario.measurements):
            return
        measurement = scenario.measurements[event.i - 1]
        measurement.measured_ms = event.measured_ms
        measurement.start_ms = event.start_ms
        measurement.cpu_wait_ms = event.cpu_wait_ms
        config = scenario.planned.config
        replayed = config.replay_syn and event.i == scenario.planned.iterations
        if config.pattern == "rr" and not replayed:  # a replay calls no connect()
            measurement.connect_ms = event.connect_ms
        self.tell(IterationMeasured(event.scenario, event.i, event.measured_ms))

    def _captured(self, event: Captured) -> None:
        scenario = self.by_name.get(event.scenario)
        if scenario is None:
            return
        scenario.captured, scenario.frames = list(event.segments), list(event.frames)
        scenario.calls = list(event.calls)
        scenario.capture_lost = event.lost
        scenario.compare_packets()

    def _counters(self, event: Counters) -> None:
        scenario = self.by_name.get(event.scenario)
        if scenario is None:
            return
        scenario.counters = dict(event.counters)
        scenario.cpu_wait_ms, scenario.steal_ms = event.cpu_wait_ms, event.steal_ms
        if event.app_accepted is not None and event.app_requests is not None:
            scenario.app = {"accepted": event.app_accepted, "requests": event.app_requests}
        scenario.counter_diff = counter_check.counter_diff(
            scenario.simulation, scenario.counters, scenario.app
        )
