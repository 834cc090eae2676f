"""What a lab run or a simulation gives: each measurement beside its prediction, typed.

Rules:
- A LabResult holds one ScenarioResult per planned scenario: the model's
  simulation, one Measurement per iteration (its band from the model, its
  measured time once the runner reports it), and, after a real run, the
  counters, the application's counts and the capture with its comparison
  (tfolab.lab.packets.PacketComparison).
- Nothing here words a verdict (tfolab.view.run_summary does) or runs
  anything; `to_json()` gives the JSON contract of DESIGN.md, "Contracts".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tfolab.core import kernel
from tfolab.lab import packets
from tfolab.lab.disagreements import Disagreement
from tfolab.lab.packet_rows import model_rows
from tfolab.lab.plan import PlannedScenario
from tfolab.model import Simulation
from tfolab.model.captured import CapturedCall, CapturedRow
from tfolab.model.predict import path_segments
from tfolab.model.simulation import model_handshakes_ms, with_measured_round_trip
from tfolab.runner.protocol import DelayerLateness


@dataclass
class Measurement:
    i: int
    measured_ms: float | None
    predicted_ms: float
    tolerance_ms: float
    connect_ms: float | None = None  # connect()/sendto() return, measured (rr scenarios)
    start_ms: float | None = None  # when it started, on the captured segments' clock
    cpu_wait_ms: float | None = None  # the lab's threads' wait for a CPU meanwhile (measured)
    # how late the delay backend released the segments on the critical path, as it
    # measured that (packets.backend_lateness): the band stands around the prediction
    # moved by it
    backend_late_ms: float = 0.0
    # how much longer than the model the applications took to make their calls on the
    # critical path after the segments that woke them, as they stamped them
    # (packets.app_lateness)
    apps_late_ms: float = 0.0

    @property
    def expected_ms(self) -> float:
        """The prediction with the delay backend's own measured lateness and the
        applications' measured wake-ups on its path."""
        return self.predicted_ms + self.backend_late_ms + self.apps_late_ms

    @property
    def ok(self) -> bool | None:
        if self.measured_ms is None:
            return None
        return abs(self.measured_ms - self.expected_ms) <= self.tolerance_ms

    @property
    def off_by_ms(self) -> float:
        """How far outside the band (0 inside it)."""
        if self.measured_ms is None:
            return 0.0
        return max(0.0, abs(self.measured_ms - self.expected_ms) - self.tolerance_ms)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"i": self.i}
        if self.measured_ms is not None:
            data["measured_ms"] = round(self.measured_ms, 3)
        data["predicted_ms"] = round(self.predicted_ms, 3)
        data["tolerance_ms"] = round(self.tolerance_ms, 3)
        if self.backend_late_ms:
            data["backend_late_ms"] = round(self.backend_late_ms, 3)
        if self.apps_late_ms:
            data["apps_late_ms"] = round(self.apps_late_ms, 3)
        if self.measured_ms is not None:
            data["ok"] = self.ok
        if self.connect_ms is not None:
            data["connect_ms"] = round(self.connect_ms, 3)
        if self.cpu_wait_ms is not None:
            data["cpu_wait_ms"] = round(self.cpu_wait_ms, 3)
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
    calls: list[CapturedCall] = field(default_factory=list)  # the applications' stamped calls
    frames: list[tuple[int, bytes]] = field(default_factory=list)
    capture_lost: int = 0
    comparison: packets.PacketComparison | None = None
    # The predicted TcpExt counters the kernel moved otherwise (tfolab.lab.counters).
    counter_diff: list[str] = field(default_factory=list)
    # What the server application did in the measured part: "accepted", "requests".
    app: dict[str, int] = field(default_factory=dict)
    # How long the lab's threads waited for a CPU over the measured part (None: not measured).
    cpu_wait_ms: float | None = None
    # How long the hypervisor took the machine's CPUs meanwhile (steal, all CPUs).
    steal_ms: float = 0.0

    @property
    def round_trip_excess_ms(self) -> float | None:
        """The most a measured handshake took beyond the model's 2D (connect() call to
        return, where the model's is the plain round trip); None: none measured."""
        plain = model_handshakes_ms(self.simulation)
        excesses = [
            m.connect_ms - plain[m.i]
            for m in self.measurements
            if m.connect_ms is not None and m.i in plain
        ]
        return max(excesses) if excesses else None

    def compare_packets(self) -> None:
        """The capture against the model (tfolab.lab.packets.compare); where a race's other
        outcome fits the kernel better (two applications woken at once, a timer-wheel
        bucket, ...), that timeline is kept, and so are its headline predictions: each
        iteration is judged against the timeline the kernel was shown to follow, moved by
        how late the delay backend measured itself on that iteration's path. Where
        the run's handshakes measured a round trip longer than the backend's error
        allows, the model takes that as the host's (simulation.with_measured_round_trip)."""
        if self.captured is None:
            return
        excess = self.round_trip_excess_ms
        if excess is not None:
            self.simulation = with_measured_round_trip(self.simulation, excess)
        starts = {m.i: m.start_ms for m in self.measurements if m.start_ms is not None}
        self.comparison = packets.compare(
            self.simulation, self.captured, starts, self.capture_lost, self.calls
        )
        self.simulation = self.comparison.simulation
        chosen = {p.i: p for p in self.simulation.predictions}
        late = packets.backend_lateness(self.comparison.pairs)
        woke = self.comparison.apps_late
        by_id = {e.id: e for e in self.simulation.events}
        for m in self.measurements:
            if m.i in chosen:
                m.predicted_ms, m.tolerance_ms = chosen[m.i].predicted_ms, chosen[m.i].tolerance_ms
                on_path = path_segments(chosen[m.i].path, by_id)
                m.backend_late_ms = sum(late.get(i, 0.0) for i in on_path)
                # the start's own call is where the measurement starts: not a lateness
                m.apps_late_ms = sum(woke.get(i, 0.0) for i in chosen[m.i].path[1:])

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
            if self.cpu_wait_ms is not None:
                data["cpu_wait_ms"] = round(self.cpu_wait_ms, 3)
                data["steal_ms"] = round(self.steal_ms, 3)
            excess = self.round_trip_excess_ms
            if excess is not None:
                data["round_trip_excess_ms"] = round(excess, 3)
        data["predicted_counters"] = dict(self.simulation.counters)
        data["predicted_app"] = dict(self.simulation.app)
        data["timeline"] = [event.to_json() for event in self.simulation.events]
        if measured and self.captured is not None:
            data["captured"] = [row.to_json() for row in self.captured]
            data["calls"] = [call.to_json() for call in self.calls]
            data["packet_diff"] = self.packet_diff
            data["packet_disagreements"] = [d.to_json() for d in self.disagreements]
            data["races"] = {"named": self.races[0], "used": self.races[1]}
            if self.comparison is not None and self.comparison.search_cut:
                data["races"]["search_limit"] = self.comparison.search_cut
        return data


@dataclass(frozen=True)
class Repeat:
    """Why a scenario was measured again: its worst miss, how long the lab's threads
    waited for a CPU over its measured part, how long the hypervisor took the machine's
    CPUs meanwhile, and the latest the delayer released a packet in the run
    (lab/repeats.py)."""

    scenario: str
    iteration: int
    missed_by_ms: float
    cpu_wait_ms: float
    steal_ms: float = 0.0
    delayer_late_ms: float = 0.0

    def words(self) -> str:
        more = ""
        if self.steal_ms:
            more += f", the hypervisor took {self.steal_ms:.0f} ms of the machine's CPUs"
        if self.delayer_late_ms >= 0.05:
            more += f", the delayer released a packet {self.delayer_late_ms:.1f} ms late"
        return (
            f"{self.scenario} measured again: iteration {self.iteration} was "
            f"{self.missed_by_ms:.1f} ms late, and the lab's threads waited "
            f"{self.cpu_wait_ms:.1f} ms for a CPU{more} while it measured "
            "(the machine, not TCP)"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "iteration": self.iteration,
            "missed_by_ms": round(self.missed_by_ms, 3),
            "cpu_wait_ms": round(self.cpu_wait_ms, 3),
            "steal_ms": round(self.steal_ms, 3),
            "delayer_late_ms": round(self.delayer_late_ms, 3),
        }


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
    # scenarios measured again because the machine, not TCP, took the time (lab/repeats.py)
    repeats: list[Repeat] = field(default_factory=list)
    # how late the NFQUEUE delayer released packets over the run (None: no delayer)
    delayer_lateness: DelayerLateness | None = None

    @property
    def delayer_late_max_ms(self) -> float:
        """The latest any packet of the run left the delayer after its due time, ms."""
        return self.delayer_lateness.max_us / 1000 if self.delayer_lateness else 0.0

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
            data["repeats"] = [repeat.to_json() for repeat in self.repeats]
            if self.delayer_lateness is not None:
                late = self.delayer_lateness
                data["delayer_late_ms"] = {
                    "median": round(late.median_us / 1000, 4),
                    "p99": round(late.p99_us / 1000, 4),
                    "max": round(late.max_us / 1000, 4),
                }
        data["hz"] = self.hz
        data["scenarios"] = [s.to_json(measured=self.measured) for s in self.scenarios]
        return data
