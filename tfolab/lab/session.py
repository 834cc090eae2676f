"""A lab run: the model's prediction beside every measurement.

This joins the layers for the CLI and the UI: it plans the scenarios of a lab
(with --set overrides), asks the model for predictions, streams a real run
through the runner and grades every measurement against its band.

Rules: no printing and no UI here; callers get typed results and callbacks.
Results serialise to the JSON shape of docs/DESIGN.md, "Contracts".
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tfolab.core import kernel, native
from tfolab.core.errors import UserError
from tfolab.core.slots import SlotTable
from tfolab.lab import counters as counter_check
from tfolab.lab import packets, served_budget
from tfolab.lab.catalog import Lab
from tfolab.lab.disagreements import Disagreement
from tfolab.lab.packet_rows import model_rows
from tfolab.model import Accuracy, Simulation, simulate
from tfolab.model.domain import gso_packets_per_burst
from tfolab.model.rcv_space import ReceiveMemory, receive_memory_for
from tfolab.model.scenario import (
    MAX_DELAY_MS,
    MAX_ITERATIONS,
    ScenarioConfig,
    SettingError,
    parse_settings,
)
from tfolab.runner import client
from tfolab.runner.backends import (
    BACKEND_CHOICES,
    BACKENDS,
    HOST_OVERHEAD_MS,
    HOST_OVERHEAD_NORMAL_SCHEDULING_MS,
    likely_backend,
)
from tfolab.runner.protocol import (
    Captured,
    CapturedRow,
    Counters,
    Event,
    Failed,
    Iteration,
    Job,
    JobScenario,
    Setup,
    SlotTaken,
)

PINGPONG_SYSCTL = "/proc/sys/net/ipv4/tcp_pingpong_thresh"


@dataclass(frozen=True)
class PlannedScenario:
    name: str
    summary: str
    iterations: int
    config: ScenarioConfig


@dataclass
class Measurement:
    i: int
    measured_ms: float | None
    predicted_ms: float
    tolerance_ms: float
    connect_ms: float | None = None  # connect()/sendto() return, measured (rr scenarios)
    start_ms: float | None = None  # when it started, on the captured segments' clock

    @property
    def ok(self) -> bool | None:
        if self.measured_ms is None:
            return None
        return abs(self.measured_ms - self.predicted_ms) <= self.tolerance_ms

    @property
    def off_by_ms(self) -> float:
        """How far outside the band (0 inside it)."""
        if self.measured_ms is None:
            return 0.0
        return max(0.0, abs(self.measured_ms - self.predicted_ms) - self.tolerance_ms)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"i": self.i}
        if self.measured_ms is not None:
            data["measured_ms"] = round(self.measured_ms, 3)
        data["predicted_ms"] = round(self.predicted_ms, 3)
        data["tolerance_ms"] = round(self.tolerance_ms, 3)
        if self.measured_ms is not None:
            data["ok"] = self.ok
        if self.connect_ms is not None:
            data["connect_ms"] = round(self.connect_ms, 3)
        return data


@dataclass
class ScenarioResult:
    planned: PlannedScenario
    simulation: Simulation
    measurements: list[Measurement]
    counters: dict[str, int] = field(default_factory=dict)
    # What the kernel put on lo (None: not captured), its frames for pcap, and how it
    # compares with the model (tfolab.lab.packets; None until compared).
    captured: list[CapturedRow] | None = None
    frames: list[tuple[int, bytes]] = field(default_factory=list)
    capture_lost: int = 0
    comparison: packets.PacketComparison | None = None
    # The predicted TcpExt counters the kernel moved otherwise (tfolab.lab.counters).
    counter_diff: list[str] = field(default_factory=list)
    # What the server application did in the measured part: "accepted", "requests".
    app: dict[str, int] = field(default_factory=dict)

    def compare_packets(self) -> None:
        """The capture against the model (tfolab.lab.packets.compare); where the other order
        of two applications woken at once fits the kernel better, that timeline is kept."""
        if self.captured is None:
            return
        starts = {m.i: m.start_ms for m in self.measurements if m.start_ms is not None}
        self.comparison = packets.compare(self.simulation, self.captured, starts, self.capture_lost)
        self.simulation = self.comparison.simulation

    @property
    def disagreements(self) -> tuple[Disagreement, ...]:
        return self.comparison.disagreements if self.comparison else ()

    @property
    def packet_diff(self) -> list[str]:
        """One sentence per packet disagreement (empty: they agree, or nothing compared)."""
        return self.comparison.sentences if self.comparison else []

    @property
    def races(self) -> tuple[int, int]:
        """(races the model named, races the comparison used)."""
        if self.comparison is None:
            return (0, 0)
        return self.comparison.races_named, self.comparison.races_used

    @property
    def packets_matching(self) -> tuple[int, int]:
        """(segments that agree, segments that had to), for the table's packets column."""
        if self.comparison is None:
            total = sum(1 for row in model_rows(self.simulation) if not row.optional)
            return total, total
        return self.comparison.matching

    def to_json(self, *, measured: bool) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.planned.name,
            "iterations": [m.to_json() for m in self.measurements],
        }
        if measured:
            data["counters"] = self.counters
            data["counter_diff"] = list(self.counter_diff)
            if self.app:
                data["app"] = dict(self.app)
        data["predicted_counters"] = dict(self.simulation.counters)
        data["predicted_app"] = dict(self.simulation.app)
        data["timeline"] = [event.to_json() for event in self.simulation.events]
        if measured and self.captured is not None:
            data["captured"] = [row.to_json() for row in self.captured]
            data["packet_diff"] = self.packet_diff
            data["packet_disagreements"] = [d.to_json() for d in self.disagreements]
            data["races"] = {"named": self.races[0], "used": self.races[1]}
        return data


@dataclass
class LabResult:
    lab: str
    delay_ms: float
    backend: str
    kernel_release: str  # e.g. "6.18.44"; "kernel" in the JSON contract
    scenarios: list[ScenarioResult]
    setup_ms: float | None = None
    hz: int = kernel.DEFAULT_HZ
    notes: list[str] = field(default_factory=list)
    measured: bool = False
    capture_off: str = ""  # why packets were not captured ("" when they were)
    slot_wait_ms: float | None = None  # time in line for a measurement slot (tfolab.core.slots)
    slots: int | None = None  # how many measurement slots the machine has

    @property
    def failures(self) -> list[tuple[str, Measurement]]:
        return [
            (s.planned.name, m) for s in self.scenarios for m in s.measurements if m.ok is False
        ]

    @property
    def packet_failures(self) -> list[tuple[str, str]]:
        return [(s.planned.name, sentence) for s in self.scenarios for sentence in s.packet_diff]

    @property
    def counter_failures(self) -> list[tuple[str, str]]:
        return [(s.planned.name, sentence) for s in self.scenarios for sentence in s.counter_diff]

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"lab": self.lab, "delay_ms": self.delay_ms}
        if self.measured:
            data |= {
                "backend": self.backend,
                "kernel": self.kernel_release,
                "setup_ms": self.setup_ms,
            }
            if self.slot_wait_ms is not None:
                data["slot_wait_ms"] = self.slot_wait_ms
                data["slots"] = self.slots
            if self.capture_off:
                data["capture"] = f"packets not captured: {self.capture_off}"
        data["hz"] = self.hz
        data["scenarios"] = [s.to_json(measured=self.measured) for s in self.scenarios]
        return data


def parse_delay(text: str, example: str = "--delay 10") -> float:
    """The one-way delay in ms from '10', '2.5' or '10ms'; UserError otherwise.

    `example` is how the fix shows a good value, in the flag the user typed.
    """
    raw = text.strip().lower().removesuffix("ms").strip()
    try:
        value = float(raw)
    except ValueError:
        raise UserError(
            f"invalid delay {text!r}",
            f"give the one-way delay in milliseconds, e.g. {example}",
        ) from None
    if not 0 <= value <= MAX_DELAY_MS or value != value:
        raise UserError(
            f"delay {text!r} is out of range",
            f"give a one-way delay from 0 to {MAX_DELAY_MS:g} ms, e.g. {example}",
        )
    return value


def parse_set_options(pairs: list[str]) -> dict[str, str]:
    settings: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--set {pair!r} is not KEY=VALUE", "e.g. --set nodelay=true")
        settings[key.strip()] = value.strip()
    return settings


REPLAY_MIN_ITERATIONS = 2


def plan(
    lab: Lab,
    scenario: str | None = None,
    iterations: int | None = None,
    settings: dict[str, str] | None = None,
) -> list[PlannedScenario]:
    """The scenarios to run, with every setting and combination checked (UserError if not)."""
    chosen = [lab.scenario(scenario)] if scenario else list(lab.scenarios)
    if iterations is not None and (
        not isinstance(iterations, int)
        or isinstance(iterations, bool)
        or not 1 <= iterations <= MAX_ITERATIONS
    ):
        raise UserError(f"--iterations {iterations} is out of range", f"give 1 to {MAX_ITERATIONS}")
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
    return planned


def check_run(planned: list[PlannedScenario], delay_ms: float, backend: str) -> str:
    """What a real run would refuse after its network is up, refused before anything starts.

    Returns the backend the run will most likely get.
    """
    if backend not in BACKEND_CHOICES:
        raise UserError(
            f"unknown backend {backend!r}", f"pick one of: {', '.join(BACKEND_CHOICES)}"
        )
    if not 0 <= delay_ms <= MAX_DELAY_MS:
        raise UserError(
            f"delay {delay_ms:g} ms is out of range", f"give 0 to {MAX_DELAY_MS:g} ms one way"
        )
    likely = likely_backend(backend, delay_ms, native.optional_executable("tfo-delay"))  # type: ignore[arg-type]
    SlotTable.open()  # the machine-wide measurement slots are usable (and agree on N)
    if not planned:
        raise UserError("no scenario to run", "see `tfolab list`")
    if any(p.config.fastopen_queue_full for p in planned):
        raise UserError(
            "fastopen_queue_full is a model-only setting: a real run cannot fill the server's "
            "Fast Open queue, so the kernel would accept the SYN's data",
            "see it with `tfolab simulate`, or drop that --set",
        )
    if any(p.config.pingpong_thresh != 1 for p in planned) and not os.path.exists(PINGPONG_SYSCTL):
        raise UserError(
            "this kernel has no net.ipv4.tcp_pingpong_thresh sysctl",
            "drop the pingpong_thresh setting (the sysctl exists since Linux 6.7; "
            "before, the threshold is built in)",
        )
    return likely


def check_small_queues(result: LabResult, backend: str) -> None:
    """A backend that keeps queued skbs charged: refuse a write of more than two GSO packets.

    TCP Small Queues (tcp_small_queue_check) then holds the third until the
    first leaves the delayer's queue, D later: a wait the model, which is
    netem's link, does not have (domain.py).
    """
    if not BACKENDS[backend].autocorking_off:  # netem orphans the skb; no delay, no wait
        return
    for scenario in result.scenarios:
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


def receive_memory(
    mtu: int | None = None, skb_heads: dict[int, int] | None = None
) -> ReceiveMemory:
    """This kernel's receive-memory rules for the model (its version and tcp_rmem), with
    the segment overhead the runner measured at this MTU where it did."""
    (_, default, high), _ = kernel.tcp_rmem()
    version = kernel.kernel_version()
    if version == (0, 0):
        rules = ReceiveMemory(rmem_default=default, rmem_max=high)
    else:
        rules = receive_memory_for(version, default, high)
    measured = (skb_heads or {}).get(mtu) if mtu is not None else None
    if measured is not None and measured > 0:
        rules = dataclasses.replace(rules, skb_head_truesize=measured)
    return rules


def accuracy_for(backend: str, realtime: bool = True) -> Accuracy:
    """How exact a run is: the backend's error per packet, and the host's scheduling."""
    return Accuracy(
        per_packet_delay_error_ms=BACKENDS.get(backend, BACKENDS["nfqueue"]).per_packet_error_ms,
        host_overhead_ms=HOST_OVERHEAD_MS if realtime else HOST_OVERHEAD_NORMAL_SCHEDULING_MS,
    )


def predict(
    lab: Lab,
    planned: list[PlannedScenario],
    delay_ms: float,
    *,
    backend: str = "nfqueue",
    hz: int | None = None,
    realtime: bool = True,
    skb_heads: dict[int, int] | None = None,
) -> LabResult:
    """The model alone: every scenario simulated, no measurements.

    `skb_heads`: a received segment's truesize beyond its payload per MTU, as
    the runner measured it; without it the kernel generation's estimate.
    """
    hz = hz or kernel.kernel_hz()[0]
    scenarios = []
    for p in planned:
        try:
            sim = simulate(
                p.config,
                one_way_delay_ms=delay_ms,
                iterations=p.iterations,
                hz=hz,
                accuracy=accuracy_for(backend, realtime),
                receive_space_bytes=kernel.receive_space_bytes()[0],
                receive_memory=receive_memory(p.config.mtu, skb_heads or {}),
            )
        except ValueError as err:
            raise UserError(f"scenario {p.name}: {err}", "check --delay and --set values") from None
        measurements = [
            Measurement(pred.i, None, pred.predicted_ms, pred.tolerance_ms)
            for pred in sim.predictions
        ]
        scenarios.append(ScenarioResult(p, sim, measurements))
    return LabResult(lab.name, delay_ms, backend, kernel.kernel_release(), scenarios, hz=hz)


async def run(
    lab: Lab,
    planned: list[PlannedScenario],
    delay_ms: float,
    backend: str,
    on_event: Callable[[Event], None] | None = None,
) -> LabResult:
    """Run the lab for real and grade every measurement against the model's band.

    Everything the runner or the model could refuse is checked first, so bad
    input fails here with a UserError before any process or namespace exists.
    """
    likely = check_run(planned, delay_ms, backend)
    # the model's own checks, before the runner starts
    predicted = predict(lab, planned, delay_ms, backend=likely)
    check_small_queues(predicted, likely)
    served_budget.check_run(predicted)  # a served session's run fits the class's budget
    job = Job(
        lab.name,
        delay_ms,
        backend,
        tuple(JobScenario(p.name, p.iterations, p.config) for p in planned),
    )
    result: LabResult | None = None
    by_name: dict[str, ScenarioResult] = {}
    async for event in client.stream_events(job, hold_cap_s=served_budget.hold_cap_s()):
        if isinstance(event, Failed):
            raise UserError(event.reason, event.fix)
        if isinstance(event, Setup):
            # The delay that really ran: backend "none" adds nothing whatever was asked.
            result = predict(
                lab,
                planned,
                event.delay_ms,
                backend=event.backend,
                realtime=event.realtime,
                skb_heads=event.skb_heads,
            )
            result.measured = True
            result.setup_ms = event.setup_ms
            result.kernel_release = event.kernel
            result.notes = list(event.notes)
            result.capture_off = event.capture
            by_name = {s.planned.name: s for s in result.scenarios}
        elif isinstance(event, SlotTaken) and result is not None:
            result.slot_wait_ms, result.slots = event.waited_ms, event.slots
        elif isinstance(event, Iteration) and event.scenario in by_name:
            scenario = by_name[event.scenario]
            if 0 < event.i <= len(scenario.measurements):
                measurement = scenario.measurements[event.i - 1]
                measurement.measured_ms = event.measured_ms
                measurement.start_ms = event.start_ms
                config = scenario.planned.config
                replayed = config.replay_syn and event.i == scenario.planned.iterations
                if config.pattern == "rr" and not replayed:  # a replay calls no connect()
                    measurement.connect_ms = event.connect_ms
        elif isinstance(event, Captured) and event.scenario in by_name:
            captured = by_name[event.scenario]
            captured.captured, captured.frames = list(event.segments), list(event.frames)
            captured.capture_lost = event.lost
            captured.compare_packets()
        elif isinstance(event, Counters) and event.scenario in by_name:
            scenario = by_name[event.scenario]
            scenario.counters = dict(event.counters)
            if event.app_accepted is not None and event.app_requests is not None:
                scenario.app = {"accepted": event.app_accepted, "requests": event.app_requests}
            scenario.counter_diff = counter_check.counter_diff(
                scenario.simulation, scenario.counters, scenario.app
            )
        if on_event is not None:
            on_event(event)
    if result is None:
        raise UserError("the runner reported no setup", "run `tfolab doctor`")
    return result
