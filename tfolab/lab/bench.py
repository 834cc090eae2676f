"""The bench: N fresh HTTP GETs with and without Fast Open, per delay, beside nginx.

Rules: `run_bench` takes a checked BenchPlan (bench_plan.py) and runs one
runner process per delay (`python -m tfolab.runner.bench_main`: a fresh
namespace, its delay backend, the servers); everything it reports comes from
the runner's typed events. The gain is the field report's: plain total time /
TFO total time - 1, in %. The prediction beside it is bench_predict's (the
model's handshake timings plus the CPU term measured at D = 0). `to_json` is
the contract of `tfolab bench --json` (docs/DESIGN.md).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources

from tfolab.core.errors import UserError
from tfolab.lab import served_budget
from tfolab.lab.bench_plan import DEFAULT_REQUESTS, BenchPlan
from tfolab.lab.bench_predict import CpuTerm, predicted_gain_pct
from tfolab.runner import client
from tfolab.runner.protocol import (
    BenchJob,
    BenchMeasured,
    BenchProgress,
    Done,
    Failed,
    Note,
    Setup,
)

MODES = ("plain", "tfo")
BUNDLED = "tfolab"
ROUNDS_AT_ZERO = 15


@dataclass(frozen=True)
class ModeFigures:
    """One (delay, server, mode) run."""

    total_s: float
    latencies_ms: tuple[float, ...]
    syn_data_acked: int
    counters: dict[str, int]
    server_cpu_ms: float = 0.0
    client_cpu_ms: float = 0.0
    round_totals_s: tuple[float, ...] = ()  # every round's total, where there were several

    @property
    def requests(self) -> int:
        return len(self.latencies_ms)

    @property
    def req_per_s(self) -> float:
        return self.requests / self.total_s if self.total_s > 0 else 0.0

    def percentile_ms(self, q: float) -> float:
        ordered = sorted(self.latencies_ms)
        if not ordered:
            return 0.0
        rank = math.ceil(q / 100 * len(ordered)) - 1  # nearest rank
        return ordered[min(len(ordered) - 1, max(0, rank))]

    @property
    def server_cpu_us_per_request(self) -> float:
        return self.server_cpu_ms * 1000 / self.requests if self.requests else 0.0

    @property
    def client_cpu_us_per_request(self) -> float:
        return self.client_cpu_ms * 1000 / self.requests if self.requests else 0.0

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "total_s": round(self.total_s, 4),
            "req_per_s": round(self.req_per_s, 1),
            "p50_ms": round(self.percentile_ms(50), 3),
            "p99_ms": round(self.percentile_ms(99), 3),
            "syn_data_acked": self.syn_data_acked,
            "server_cpu_us_per_request": round(self.server_cpu_us_per_request, 2),
            "client_cpu_us_per_request": round(self.client_cpu_us_per_request, 2),
        }
        if len(self.round_totals_s) > 1:
            data["round_totals_s"] = [round(t, 4) for t in self.round_totals_s]
        return data


@dataclass
class BenchRow:
    """One delay and one server: both modes, the gain, the prediction."""

    delay_ms: float
    server: str
    backend: str
    concurrency: int
    rounds: int = 1
    late_ms: float = 0.0  # the delayer's median lateness per packet in this delay's run
    modes: dict[str, ModeFigures] = field(default_factory=dict)
    predicted_gain_pct: float | None = None
    predicted_from: str = ""

    @property
    def gain_pct(self) -> float | None:
        plain, tfo = self.modes.get("plain"), self.modes.get("tfo")
        if plain is None or tfo is None or tfo.total_s <= 0:
            return None
        return round((plain.total_s / tfo.total_s - 1) * 100, 1)

    def to_json(self) -> dict[str, object]:
        return {
            "delay_ms": self.delay_ms,
            "server": self.server,
            "backend": self.backend,
            "concurrency": self.concurrency,
            "rounds": self.rounds,
            "delayer_late_ms": self.late_ms,
            **{mode: figures.to_json() for mode, figures in self.modes.items()},
            "gain_pct": self.gain_pct,
            "predicted_gain_pct": self.predicted_gain_pct,
            "predicted_from": self.predicted_from,
            "counters": {mode: figures.counters for mode, figures in self.modes.items()},
        }


@dataclass
class BenchResult:
    plan: BenchPlan
    rows: list[BenchRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    kernel_release: str = ""
    runtime_s: float = 0.0

    @property
    def backend(self) -> str:
        """The delay backend of the delayed runs ("none" when every delay is 0)."""
        delayed = [row.backend for row in self.rows if row.delay_ms > 0]
        return delayed[0] if delayed else "none"

    def row(self, delay_ms: float, server: str) -> BenchRow | None:
        return next((r for r in self.rows if r.delay_ms == delay_ms and r.server == server), None)

    def server_vs_nginx(self) -> dict[str, float] | None:
        """Bundled req/s / nginx req/s at D = 0, plain and TFO; None without both."""
        ours, theirs = self.row(0.0, BUNDLED), self.row(0.0, "nginx")
        if ours is None or theirs is None:
            return None
        ratios = {}
        for mode in MODES:
            if mode in ours.modes and mode in theirs.modes and theirs.modes[mode].req_per_s:
                ratios[mode] = round(ours.modes[mode].req_per_s / theirs.modes[mode].req_per_s, 3)
        return ratios

    def cpu_term(self) -> CpuTerm | None:
        zero = self.row(0.0, BUNDLED)
        if zero is None or any(mode not in zero.modes for mode in MODES):
            return None
        plain, tfo = zero.modes["plain"], zero.modes["tfo"]
        return CpuTerm(plain.total_s / plain.requests, tfo.total_s / tfo.requests)

    def predict(self) -> None:
        cpu = self.cpu_term()
        for row in self.rows:
            row.predicted_gain_pct, row.predicted_from = predicted_gain_pct(
                row.delay_ms, self.plan.requests, row.concurrency, cpu, row.late_ms
            )

    def to_json(self) -> dict[str, object]:
        plan = self.plan
        return {
            "requests": plan.requests,
            "concurrency": plan.concurrency if plan.concurrency is not None else "auto",
            "concurrency_rule": plan.concurrency_rule,
            "backend": self.backend,
            "kernel": self.kernel_release,
            "delays_ms": list(plan.delays),
            "peer": "nginx" if "nginx" in plan.servers else "none",
            "peer_note": plan.peer_note,  # why nginx did not run ("" when it did)
            "runtime_s": round(self.runtime_s, 2),
            "notes": self.notes,
            "results": [row.to_json() for row in self.rows],
            "server_vs_nginx": self.server_vs_nginx(),
        }


@dataclass(frozen=True)
class BenchGuide:
    """The bench's guide (labs/bench.md, installed with tfolab; the bench is no lab file)."""

    title: str = f"Bench: {DEFAULT_REQUESTS} requests with and without Fast Open (by default)"

    def guide_text(self) -> str:
        return (resources.files("tfolab.lab") / "labs" / "bench.md").read_text(encoding="utf-8")


Progress = Callable[[float, str], None]


def expected_run_s(plan: BenchPlan, delay_ms: float) -> float:
    """Roughly how long one (server, mode) run takes: 3D per request on average over
    plain and TFO, C at a time, plus about 60 us of CPU per request and the start-up."""
    concurrency = plan.concurrency_for(delay_ms)
    return plan.requests * (3 * delay_ms / 1000 / concurrency + 60e-6) + 0.05


def rounds_for(delay_ms: float) -> int:
    """At D = 0 a run takes tens of ms and the machine's other load shows: the median
    of ROUNDS_AT_ZERO alternating rounds; at D > 0 one run is long enough."""
    return ROUNDS_AT_ZERO if delay_ms == 0 else 1


def _job(plan: BenchPlan, delay_ms: float) -> BenchJob:
    return BenchJob(
        delay_ms=delay_ms,
        backend="auto",
        requests=plan.requests,
        concurrency=plan.concurrency_for(delay_ms),
        servers=plan.servers,
        nginx=plan.nginx,
        modes=MODES,
        rounds=rounds_for(delay_ms),
    )


async def run_bench(plan: BenchPlan, on_progress: Progress | None = None) -> BenchResult:
    """Every delay of the plan, one runner each; the result with its predictions."""
    served_budget.check_bench(plan)  # a served session's bench fits the class's budget
    started = time.monotonic()
    result = BenchResult(plan)
    # Progress in expected seconds: a run at D = 75 ms lasts a hundred D = 0 rounds.
    weights = {d: expected_run_s(plan, d) for d in plan.delays}
    total = sum(weights[d] * rounds_for(d) for d in plan.delays) * len(plan.servers) * len(MODES)
    finished = 0.0

    def report(done: float, text: str) -> None:
        if on_progress is not None:
            on_progress(min(1.0, done / total), text)

    for delay in plan.delays:
        job = _job(plan, delay)
        runs: dict[tuple[str, str], list[ModeFigures]] = {}
        backend, late_ms = "none", 0.0
        report(finished, f"D = {delay:g} ms: setting up the namespace")
        async for event in client.stream_events(
            job,
            module="tfolab.runner.bench_main",
            timeout_s=_timeout_s(job),
            hold_cap_s=served_budget.hold_cap_s(),
        ):
            if isinstance(event, Failed):
                raise UserError(event.reason, event.fix)
            if isinstance(event, Setup):
                backend = event.backend
                result.kernel_release = event.kernel or result.kernel_release
            elif isinstance(event, Note) and event.text not in result.notes:
                result.notes.append(event.text)
            elif isinstance(event, BenchProgress):
                report(
                    finished + weights[delay] * event.done / max(1, event.requests),
                    _what(delay, event.server, event.mode, job.concurrency),
                )
            elif isinstance(event, BenchMeasured):
                runs.setdefault((event.server, event.mode), []).append(_figures(event))
                finished += weights[delay]
                report(finished, _what(delay, event.server, event.mode, job.concurrency))
            elif isinstance(event, Done) and event.delayer_lateness is not None:
                late_ms = event.delayer_lateness.median_us / 1000
        for name in plan.servers:
            row = BenchRow(delay, name, backend, job.concurrency, job.rounds, late_ms)
            for mode in MODES:
                if (name, mode) in runs:
                    row.modes[mode] = _median(runs[name, mode])
            if row.modes:
                result.rows.append(row)
    result.predict()
    result.runtime_s = time.monotonic() - started
    return result


def _what(delay: float, server: str, mode: str, concurrency: int) -> str:
    return f"D = {delay:g} ms, {server}, {mode}, {concurrency} in flight"


def _figures(event: BenchMeasured) -> ModeFigures:
    return ModeFigures(
        total_s=event.total_ms / 1000,
        latencies_ms=tuple(v / 1000 for v in event.latencies_us),
        syn_data_acked=event.syn_data_acked,
        counters=dict(event.counters),
        server_cpu_ms=event.server_cpu_ms,
        client_cpu_ms=event.client_cpu_ms,
    )


def _median(rounds: list[ModeFigures]) -> ModeFigures:
    """The round with the median total time, whole (its latencies and counters too)."""
    if len(rounds) == 1:
        return rounds[0]
    chosen = sorted(rounds, key=lambda figures: figures.total_s)[(len(rounds) - 1) // 2]
    return dataclasses.replace(chosen, round_totals_s=tuple(r.total_s for r in rounds))


def _timeout_s(job: BenchJob) -> float:
    """Far above the slowest expected run: N x 4D / C per plain run, twice over."""
    per_run = job.requests * 4 * job.delay_ms / 1000 / job.concurrency
    return 120 + 4 * per_run * len(job.servers) * len(job.modes) * job.rounds
