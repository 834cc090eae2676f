"""Run one fuzz case for real and judge it; shrink a failing one to its smallest command.

Rules:
- A case is run exactly as a student would: `python -m tfolab run ... --json`
  in a subprocess, with the README's environment.
- `agreed`: exit 0, one JSON object, every iteration in band, every scenario's
  packet_diff and counter_diff empty. `refused`: exit 2, nothing on stdout,
  exactly one stderr line `tfolab: ...` (the reason is kept, and `simulate`
  of the same case must refuse it too, unless the reason is the backend's).
  `disagreed`: exit 1 with valid JSON (its sentences kept). Anything else is
  `crashed`: another exit code, a traceback, invalid JSON, a refusal of more
  than one line, or a timeout. `unchecked`: the machine captured no packets
  (the comparison could not run; the test skips with the reason). `held`: a
  disagreement after the delay backend held the link (below) in its run and in
  the run again: the link the model was asked for could not be had, so the case
  is not judged; the test skips with the held link's sentence, the figures
  count and list it.
- `timing=False` (CI's software-emulated VM, whose every exchange carries
  2-7 ms of emulation) judges everything but time: bands and arrival times
  are left out, flags, numbers, lengths, options, windows and counters stay.
- Only `agreed` and `refused` pass. A disagreement in time alone (a host
  that held a CPU for a tick: every packet disagreement of kind "arrival",
  read by kind, and any band missed) is run once more (`run_judged`), and the test records the
  repeat as a rerun (tests/reruns.record: listed with its reason, counted
  against CI's budget). So is one about TCP where each disagreeing connection's
  link was measured held beyond the model's bands before it (kind "link-held":
  the link was not the one asked for, an emulated VM's netem holding ACKs 31 ms);
  packets, windows and counters on a link that kept its delay are never repeated. A
  failing case is shrunk greedily (drop a setting, lower the delay or the
  iterations) while it keeps failing the same way, within a bounded number
  of re-runs.
- A disagreement keeps the run's JSON (`Outcome.report`): `kernel_lines`
  gives the kernel's packets of every scenario that disagreed, one line each,
  so a failure seen once (in CI, say) can be read against the model offline.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fuzz.space import Case
from tests.served_slots import slots_by_flag

PASSING = ("agreed", "refused")
MAX_SHRINK_RUNS = 25
# Reasons that belong to a real run alone (the machine's delay backend, a setting only
# the model can honour), which `simulate` has no part in.
RUN_ONLY_REASONS = (
    "backend",
    "NFQUEUE",
    "netem",
    "namespace",
    "permission",
    "model-only",
    "this kernel has no",
)


@dataclass
class Outcome:
    kind: str  # agreed, refused, disagreed, crashed, unchecked, held
    detail: list[str] = field(default_factory=list)  # the reason, sentences or error
    races: tuple[int, int] = (0, 0)  # named, used, over the case's scenarios
    seconds: float = 0.0
    # a disagreement in time alone: every one a late arrival (kind "arrival") or a band missed
    about_time_only: bool = False
    # every disagreement about TCP on a connection whose segments sent before it the
    # delay backend measured itself holding beyond the model's bands (kind "link-held"),
    # and any counter's in a scenario with one: the link was not the one asked for
    after_held_link: bool = False
    held_links: list[str] = field(default_factory=list)  # the link-held sentences, by kind
    report: dict[str, object] | None = None  # the run's JSON, where it disagreed

    @property
    def passed(self) -> bool:
        return self.kind in PASSING

    @property
    def timing_only(self) -> bool:
        """A disagreement in time alone: every one a late arrival or a missed band."""
        return self.kind == "disagreed" and self.about_time_only

    @property
    def repeatable(self) -> str | None:
        """Why a disagreement is measured once more (None: it is not): a miss in time
        alone, or one after the delay backend held the link (never a disagreement about
        TCP on a link that kept its delay)."""
        if self.timing_only:
            return "timing-only miss"
        if self.kind == "disagreed" and self.after_held_link:
            return "disagreement after the delay backend held the link"
        return None

    @property
    def stolen_ms(self) -> float:
        """How long the hypervisor took the machine's CPUs while the run measured (its
        scenarios' steal_ms; 0 without a report)."""
        scenarios = self.report.get("scenarios", []) if self.report else []
        assert isinstance(scenarios, list)
        return sum(float(s.get("steal_ms", 0.0)) for s in scenarios)


# A captured segment's cost in CI's software-emulated VM: capture, decoding and the
# comparison (6,666 rows of three 689,583-byte answers at MTU 576 took 132 s there)
SECONDS_PER_SEGMENT = 0.04


def band_sentence(scenario: str, iteration: dict[str, Any]) -> str:
    """A headline outside its band, with the band it was judged against: the model's
    time, moved by the lateness measured on its critical path (the delay backend's and
    the applications'), never the unmoved prediction alone."""
    band = f"{iteration['predicted_ms']} ± {iteration['tolerance_ms']} ms"
    moved = [
        f"{iteration[key]} ms {who}"
        for key, who in (
            ("backend_late_ms", "the delay backend's"),
            ("apps_late_ms", "the applications'"),
        )
        if iteration.get(key)
    ]
    if moved:
        band += ", moved by the lateness measured on its path: " + " and ".join(moved)
    measured = iteration["measured_ms"]
    return f"{scenario} #{iteration['i']} measured {measured} ms, outside its band ({band})"


def timeout_s(case: Case) -> float:
    """Generous: every iteration its round trips (slow start's grow with the answer), its
    timers and its segments, and the lab's setup.

    The segments count because the capture and its comparison grow with them: three
    1 MB answers take 6 s here and over 70 s in CI's software-emulated VM.
    """
    segments = _segments_per_iteration(case)
    round_trips = 6 + 2 * math.log2(segments / 10 + 1)  # flights of 10, 20, 40, ...
    per_iteration = 3 + 2 * case.delay_ms / 1000 * round_trips + SECONDS_PER_SEGMENT * segments
    # each lost SYN or SYN-ACK waits out a timer: 1 s, doubling (6.1) while they go on
    drop = dict(case.settings).get("drop", "")
    lost = len(drop.split(",")) if drop else 0
    per_iteration += 2**lost - 1 + (1 if case.delay_ms > 490 else 0)
    return 60.0 + case.iterations * per_iteration


def _segments_per_iteration(case: Case) -> int:
    """The data segments the case's request and answer take (its settings over the
    scenario's), at its MTU's MSS."""
    from tfolab.core.errors import UserError
    from tfolab.lab.catalog import find_lab
    from tfolab.model.domain import mss_in_use
    from tfolab.model.scenario import SettingError, parse_settings

    try:
        config = find_lab(case.lab).scenario(case.scenario).config
        config = config.with_typed(parse_settings(dict(case.settings)))
    except (UserError, SettingError):
        return 0  # refused at once: no bytes move
    mss = mss_in_use(config.mtu)
    return -(-config.request_bytes // mss) + -(-config.response_bytes // mss)


def run_case(case: Case, backend: str = "auto", *, timing: bool = True) -> Outcome:
    import time

    started = time.monotonic()
    args, environment = slots_by_flag([*case.args(), "--backend", backend, "--json"], None)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tfolab", *args],
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout_s(case),
        )
    except subprocess.TimeoutExpired:
        return Outcome("crashed", [f"no answer within {timeout_s(case):.0f} s"])
    outcome = _judge(done, timing)
    outcome.seconds = time.monotonic() - started
    if outcome.kind == "refused" and not any(r in outcome.detail[0] for r in RUN_ONLY_REASONS):
        _check_simulate_agrees(case, outcome)
    return outcome


def run_judged(
    case: Case, backend: str = "auto", *, timing: bool = True
) -> tuple[Outcome, Outcome | None]:
    """The case's outcome, and the first outcome where it was repeated (Outcome.repeatable)."""
    outcome = run_case(case, backend, timing=timing)
    if not outcome.repeatable:
        return outcome, None
    again = run_case(case, backend, timing=timing)
    if outcome.after_held_link and again.kind == "disagreed" and again.after_held_link:
        again = Outcome(
            "held",
            [
                "the delay backend held the link beyond the model's bands in both runs: "
                + again.held_links[0]
            ],
            races=again.races,
            seconds=again.seconds,
            report=again.report,
        )
    return again, outcome


def _judge(done: subprocess.CompletedProcess[str], timing: bool = True) -> Outcome:
    lines = done.stderr.strip().splitlines()
    if done.returncode == 2:
        if done.stdout.strip() or len(lines) != 1 or not lines[0].startswith("tfolab: "):
            return Outcome("crashed", ["a refusal that is not one line", *lines[-5:]])
        return Outcome("refused", [lines[0]])
    if done.returncode not in (0, 1):
        return Outcome("crashed", [f"exit {done.returncode}", *lines[-5:]])
    if "Traceback" in done.stderr:
        return Outcome("crashed", ["a traceback", *lines[-5:]])
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError as err:
        return Outcome("crashed", [f"not one JSON object: {err}", *lines[-3:]])
    said: list[str] = []
    about_time = True
    after_held = True  # every disagreement about TCP on a connection whose link was held
    held_links: list[str] = []
    named = used = 0
    for scenario in report["scenarios"]:
        name = scenario["name"]
        found = scenario.get("packet_disagreements", [])
        held = {d["connection"] for d in found if d["kind"] == "link-held"}
        held_links += [f"{name}: {d['sentence']}" for d in found if d["kind"] == "link-held"]
        for disagreement in found:
            late = disagreement["kind"] == "arrival"
            if timing or not late:
                said.append(f"{name}: {disagreement['sentence']}")
                about_time = about_time and late
            if not late and disagreement["kind"] != "link-held":
                after_held = after_held and disagreement.get("connection") in held
        said += [f"{name}: {s}" for s in scenario.get("counter_diff", [])]
        about_time = about_time and not scenario.get("counter_diff")
        after_held = after_held and (bool(held) or not scenario.get("counter_diff"))
        said += [band_sentence(name, i) for i in scenario["iterations"] if timing and not i["ok"]]
        if "captured" not in scenario:
            why = report.get("capture", "no reason given")
            return Outcome("unchecked", [f"no packets captured here: {why}"])
        races = scenario.get("races", {})
        named += races.get("named", 0)
        used += races.get("used", 0)
    if done.returncode == 0 and not said:
        return Outcome("agreed", races=(named, used))
    if done.returncode == 0 and timing:
        return Outcome("crashed", ["exit 0 with disagreements", *said])
    if not said:
        return Outcome("agreed", ["timing not judged"], races=(named, used))
    return Outcome(
        "disagreed",
        said or ["exit 1 with nothing said"],
        races=(named, used),
        about_time_only=about_time,
        after_held_link=after_held and not about_time,
        held_links=held_links,
        report=report,
    )


MAX_KERNEL_LINES = 200


def kernel_lines(outcome: Outcome) -> list[str]:
    """The kernel's packets of each scenario that disagreed, one line each (at most
    MAX_KERNEL_LINES): enough to compare with the model's timeline offline."""
    lines: list[str] = []
    scenarios = (outcome.report or {}).get("scenarios", [])
    for scenario in scenarios if isinstance(scenarios, list) else []:
        if not scenario.get("packet_disagreements") and not scenario.get("counter_diff"):
            continue
        lines.append(f"{scenario['name']}: the kernel's packets (ms from the first)")
        for row in scenario.get("captured", []):
            ack = "" if row["ack"] is None else f" ack {row['ack']}"
            options = f" <{', '.join(row['options'])}>" if row["options"] else ""
            lines.append(
                f"  {row['t_ms']:10.4f} c{row['connection']} {row['sender']:6} "
                f"{','.join(row['flags'])} seq {row['seq']}{ack} len {row['length']} "
                f"win {row['window']}{options}"
            )
    if len(lines) > MAX_KERNEL_LINES:
        cut = len(lines) - MAX_KERNEL_LINES
        lines = [*lines[:MAX_KERNEL_LINES], f"  ... {cut} more lines"]
    return lines


def _check_simulate_agrees(case: Case, outcome: Outcome) -> None:
    """simulate refuses what run refuses, in the same words (it shares the checks)."""
    done = subprocess.run(
        [sys.executable, "-m", "tfolab", *case.args("simulate"), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stderr.strip().splitlines()
    if done.returncode != 2 or lines != outcome.detail:
        outcome.kind = "crashed"
        outcome.detail = [
            f"run refused ({outcome.detail[0]}) but simulate exited {done.returncode}",
            *lines[-3:],
        ]


def shrink(
    case: Case,
    failed: Outcome,
    backend: str = "auto",
    *,
    timing: bool = True,
    simpler: Callable[[Case], list[Case]] | None = None,
    same: Callable[[Outcome], bool] | None = None,
    runs: int = 0,
    deadline: float | None = None,
    run_s: float = 0.0,
) -> tuple[Case, Outcome, int]:
    """The smallest case that still fails the same way: (case, its outcome, re-runs used).

    `simpler` gives the candidates one step simpler (default: drop a setting,
    lower the delay or the iterations); `same` says a candidate failed the
    same way (default: the same kind); `runs` already spent count against
    MAX_SHRINK_RUNS. `deadline` (time.monotonic()): no run starts that could end
    after it, a run taking up to `run_s` (the failed case's own: a simpler one is
    not longer); the smallest found by then is returned.
    """
    simpler = simpler or _simpler
    same = same or (lambda outcome: outcome.kind == failed.kind)
    best, best_outcome = case, failed
    changed = True
    while changed and runs < MAX_SHRINK_RUNS:
        changed = False
        for candidate in simpler(best):
            if runs >= MAX_SHRINK_RUNS:
                break
            if deadline is not None and time.monotonic() + run_s > deadline:
                return best, best_outcome, runs
            runs += 1
            outcome = run_case(candidate, backend, timing=timing)
            if same(outcome):
                best, best_outcome, changed = candidate, outcome, True
                break
    return best, best_outcome, runs


def _simpler(case: Case) -> list[Case]:
    out = [
        case.replace(settings=case.settings[:i] + case.settings[i + 1 :])
        for i in range(len(case.settings))
    ]
    if case.iterations > 1:
        out.append(case.replace(iterations=1))
    for delay in (0.0, 10.0, round(case.delay_ms / 2, 2)):
        if delay < case.delay_ms:
            out.append(case.replace(delay_ms=delay))
    return out
