"""A mutation check: proof that the suite bites. Run on demand (or in CI):

    python tests/mutation_check.py [--only NAME] [--keep]

Rules:
- Each breakage is one exact text replacement in one file, applied to a fresh
  copy of the tracked tree in a temporary folder (this checkout is never
  changed). The copy imports its own tfolab (PYTHONPATH) with the installed
  native parts linked in, and runs the part of the suite that should notice,
  with TFOLAB_REQUIRE_REAL=1 as CI does (an environment skip is a failure).
- First the same selections run on an untouched copy, and every test in them
  must pass there: a flake or a missing environment would otherwise count as
  a catch. A breakage whose untouched selection does not pass is reported as
  such, never as caught.
- A breakage whose replacement no longer matches the source is reported as
  stale, never as caught. A breakage is caught by a test that passed on the
  untouched copy and fails on the broken one with an AssertionError (a
  TimingMiss, after its rerun, is marked "timing"): a crash, a fixture error
  or a collection error is not a catch (tests/mutation_outcomes.py records
  each test's outcome). The table lists the breakage, the tests that caught
  it and how long the run took.
- Exit 0 when every breakage was caught, 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib.resources
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.mutation_outcomes import OUTCOMES_ENV

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Breakage:
    name: str
    path: str  # relative to the repository
    old: str
    new: str
    tests: tuple[str, ...]  # pytest arguments: the part of the suite that should notice


BREAKAGES = (
    Breakage(
        "capture: a wrong ring request (frame size off by one)",
        "tfolab/runner/capture_ring.py",
        '"=7I", block_bytes, blocks, block_bytes, blocks, RETIRE_TIMEOUT_MS, 0, 0',
        '"=7I", block_bytes, blocks, block_bytes + 1, blocks, RETIRE_TIMEOUT_MS, 0, 0',
        ("tests/runner/test_capture.py", "tests/labs/test_pcap.py"),
    ),
    Breakage(
        "NFQUEUE rule: matches the wrong interface",
        "tfolab/runner/backends/nfrule.py",
        'struct.pack("=I", LOOPBACK_IFINDEX)',
        'struct.pack("=I", LOOPBACK_IFINDEX + 1)',
        (
            "tests/runner/test_nfrule.py",
            "tests/runner/test_real_timing.py::"
            "test_a_fresh_machine_without_iptables_measures_through_nfqueue",
        ),
    ),
    Breakage(
        "model: the delayed-ACK timer one tick late",
        "tfolab/model/delack.py",
        "timeout = now + ato\n",
        "timeout = now + ato + 1\n",
        ("tests/model", "tests/labs/test_band_physics.py", "tests/cli/test_cli_output.py"),
    ),
    Breakage(
        "model: every tolerance doubled",
        "tfolab/model/predict.py",
        "        tolerance = (\n            sum(_band_ticks(timer)",
        "        tolerance = 2 * (\n            sum(_band_ticks(timer)",
        ("tests/model", "tests/labs/test_band_physics.py", "tests/cli/test_cli_output.py"),
    ),
    Breakage(
        "comparison: the delayer's measured lateness counted twice",
        "tfolab/lab/packets.py",
        "kernel_ms, model_ms = times[0], times[1] + backend_ms + apps_ms",
        "kernel_ms, model_ms = times[0], times[1] + 2 * backend_ms + apps_ms",
        ("tests/labs/test_backend_lateness.py",),
    ),
    Breakage(
        "comparison: an application's stamp after the next arrival on its side counted",
        "tfolab/lab/app_wakes.py",
        "        if stamp >= _next_arrival(hop, arrivals, woke_at):\n            continue",
        "        if stamp > math.inf:\n            continue",
        ("tests/labs/test_app_wakes.py",),
    ),
    Breakage(
        "model: a retransmitted SYN's measured timer lateness ignored",
        "tfolab/model/syn_timer.py",
        "fire_ns += sock.env.syn_timers_late.get((sock.connection, timeouts), 0)",
        "fire_ns += 0",
        ("tests/labs/test_measured_host.py",),
    ),
    Breakage(
        "model: a measured slow wake ignored (the application's turn on time)",
        "tfolab/model/loop.py",
        "self._at(now + (delay or 0), turn, application=True)",
        "self._at(now, turn, application=True)",
        ("tests/labs/test_measured_host.py",),
    ),
    Breakage(
        "runner: netem's TSval lateness without its millisecond grain (more than held)",
        "tfolab/runner/ts_lateness.py",
        "late = 0 if measured is None else measured - least[seg.tuple4] - TS_GRAIN_NS",
        "late = 0 if measured is None else measured - least[seg.tuple4]",
        ("tests/runner/test_ts_lateness.py",),
    ),
    Breakage(
        "comparison: a link held within the model's band named as held",
        "tfolab/lab/packets.py",
        "if k is None or k.late_ms <= max(error_ms, p.model.band_ms if p.model else 0.0):",
        "if k is None or k.late_ms <= error_ms:",
        ("tests/labs/test_link_held.py",),
    ),
    Breakage(
        "comparison: a held segment judged by its arrival, not its send",
        "tfolab/lab/packets.py",
        "if k.arrived_ms - k.late_ms < parted.get(k.connection, -math.inf):",
        "if k.arrived_ms < parted.get(k.connection, -math.inf):",
        ("tests/labs/test_link_held.py",),
    ),
    Breakage(
        "comparison: a connection that only misses segments parts at its end, not when due",
        "tfolab/lab/packets.py",
        "            at = _on_the_capture_clock(row, aligned)",
        "            at = math.inf",
        ("tests/labs/test_link_held.py",),
    ),
    Breakage(
        "runner: a frame sent again byte for byte measured as held by netem",
        "tfolab/runner/ts_lateness.py",
        "if seg.options.ts_val is None or again in seen:",
        "if seg.options.ts_val is None:",
        ("tests/runner/test_ts_lateness.py",),
    ),
    Breakage(
        "comparison: a wake-up measured across its iteration's start (counted twice)",
        "tfolab/lab/app_wakes.py",
        "while isinstance(cause, AppCall) and cause.id not in starts:",
        "while isinstance(cause, AppCall):",
        ("tests/labs/test_app_wakes.py",),
    ),
    Breakage(
        "comparison: a wake-up counted again by each later call of the same hop",
        "tfolab/lab/app_wakes.py",
        "round(total - sum(late.get(b, 0.0) for b in hop.between), 4)",
        "round(total, 4)",
        ("tests/labs/test_app_wakes.py",),
    ),
    Breakage(
        "comparison: the lateness that made the iteration's start later ignored",
        "tfolab/lab/packets.py",
        "backend_ms -= sum(late.get(i, 0.0) for i in ours.start_only)",
        "backend_ms -= 0.0",
        ("tests/labs/test_backend_lateness.py",),
    ),
    Breakage(
        "comparison: the window field ignored",
        "tfolab/lab/packets.py",
        "if ours.window is not None and theirs.window is not None and theirs.window not in",
        "if False and ours.window is not None and theirs.window not in",
        ("tests/labs/test_packet_diff.py",),
    ),
)


UNREDIRECT = """import sys
sys.meta_path[:] = [f for f in sys.meta_path if "Redirecting" not in type(f).__name__]
"""


def copy_tree(into: Path) -> Path:
    """The tracked files as they are now (uncommitted edits included), native parts linked."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True
    ).stdout.decode()
    tree = into / "tree"
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            target = tree / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    native = Path(str(importlib.resources.files("tfolab._native")))
    (tree / "tfolab" / "_native").symlink_to(native, target_is_directory=True)
    # An editable install puts a finder in front of sys.meta_path that maps every tfolab
    # module to this checkout; in the copy (first on PYTHONPATH) it is taken out again.
    (tree / "sitecustomize.py").write_text(UNREDIRECT)
    for folder in (into, *tree.rglob("*")):
        if folder.is_dir():
            os.chmod(folder, 0o755)  # runs as nobody read the copy too
    return tree


def apply(tree: Path, breakage: Breakage) -> bool:
    path = tree / breakage.path
    text = path.read_text()
    if text.count(breakage.old) != 1:
        return False
    path.write_text(text.replace(breakage.old, breakage.new))
    return True


Outcomes = dict[str, str]  # nodeid -> tests/mutation_outcomes.py's outcome
CATCHES = ("assertion", "timing")


def run_suite(tree: Path, tests: tuple[str, ...]) -> tuple[Outcomes, str, float]:
    """(each test's outcome, pytest's last line, seconds)."""
    outcomes_file = tree.parent / "outcomes.json"
    outcomes_file.unlink(missing_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "TFOLAB_REQUIRE_REAL": "1",
        OUTCOMES_ENV: str(outcomes_file),
    }
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-p", "tests.mutation_outcomes", *tests],
        capture_output=True, text=True, cwd=tree, env=env, timeout=1800,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    last = (
        done.stdout.strip().splitlines() or done.stderr.strip().splitlines() or ["(no output)"]
    )[-1]
    try:
        outcomes: Outcomes = json.loads(outcomes_file.read_text())
    except (OSError, ValueError):
        outcomes = {"<pytest>": "error"}  # pytest never reached the end of its session
    return outcomes, last, elapsed


def untouched_failures(outcomes: Outcomes) -> list[str]:
    """What keeps an untouched selection from being a baseline: any test not passed."""
    if not outcomes:
        return ["<no test ran>"]
    return [f"{nodeid} ({what})" for nodeid, what in sorted(outcomes.items()) if what != "passed"]


def caught_by(untouched: Outcomes, broken: Outcomes) -> list[str]:
    """The tests that passed untouched and fail with an assertion once broken."""
    return [
        nodeid + (" (timing)" if what == "timing" else "")
        for nodeid, what in sorted(broken.items())
        if what in CATCHES and untouched.get(nodeid) == "passed"
    ]


def not_counted(untouched: Outcomes, broken: Outcomes) -> int:
    """Tests that went wrong once broken in a way that is not a catch (crash, error)."""
    return sum(
        what not in (*CATCHES, "passed") and untouched.get(nodeid) == "passed"
        for nodeid, what in broken.items()
    )


def summary(caught: list[str]) -> str:
    """`N: test (k cases), ...`: parametrized cases of one test counted together."""
    counts: dict[str, int] = {}
    for nodeid in caught:
        base = nodeid.split("[")[0].removeprefix("tests/")
        counts[base] = counts.get(base, 0) + 1
    named = [f"{base} (x{n})" if n > 1 else base for base, n in counts.items()]
    return f"{len(caught)}: " + "; ".join(named)


def untouched_runs(
    chosen: list[Breakage], keep: bool
) -> dict[tuple[str, ...], tuple[Outcomes, str, float]]:
    """Each distinct selection, run once on one untouched copy."""
    folder = Path(tempfile.mkdtemp(prefix="tfolab-untouched-"))
    runs = {}
    try:
        tree = copy_tree(folder)
        for tests in dict.fromkeys(b.tests for b in chosen):
            runs[tests] = run_suite(tree, tests)
            failing = untouched_failures(runs[tests][0])
            print(
                f"untouched {' '.join(tests)}: {len(failing)} not passed in {runs[tests][2]:.0f} s",
                file=sys.stderr,
            )
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run the breakages whose name contains this")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copies")
    args = parser.parse_args()
    chosen = [b for b in BREAKAGES if not args.only or args.only in b.name]
    untouched = untouched_runs(chosen, args.keep)
    rows = [
        ("(none: the untouched tree)", f"{' '.join(tests)}: {last}", elapsed)
        for tests, (_outcomes, last, elapsed) in untouched.items()
    ]
    missed = []
    for breakage in chosen:
        baseline, _last, _elapsed = untouched[breakage.tests]
        failing = untouched_failures(baseline)
        if failing:
            missed.append(breakage.name)
            verdict = f"UNTOUCHED TREE DOES NOT PASS: {len(failing)}: " + "; ".join(failing[:5])
            rows.append((breakage.name, verdict, 0.0))
            continue
        folder = Path(tempfile.mkdtemp(prefix="tfolab-mutant-"))
        try:
            tree = copy_tree(folder)
            if not apply(tree, breakage):
                missed.append(breakage.name)
                rows.append((breakage.name, "STALE: the text to break is not in the source", 0.0))
                continue
            broken, last, elapsed = run_suite(tree, breakage.tests)
            caught = caught_by(baseline, broken)
            verdict = summary(caught) if caught else f"NOT CAUGHT ({last})"
            if other := not_counted(baseline, broken):
                verdict += f" [not counted: {other} crashed or errored]"
            if not caught:
                missed.append(breakage.name)
            rows.append((breakage.name, verdict, elapsed))
            print(f"{breakage.name}: {len(caught)} caught in {elapsed:.0f} s", file=sys.stderr)
        finally:
            if not args.keep:
                shutil.rmtree(folder, ignore_errors=True)
    print("| breakage | tests that caught it | time |")
    print("|---|---|---|")
    for name, verdict, elapsed in rows:
        print(f"| {name} | {verdict} | {elapsed:.0f} s |")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
