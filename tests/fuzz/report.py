"""The differential fuzzer's figures: `python tests/fuzz/report.py --seed S --cases N`.

Runs N seeded cases for real (one at a time: they are timing measurements)
and prints how many configurations, drawn from which ranges, agreed, were
refused (grouped by reason), disagreed or crashed, with the shrunk command
that reproduces every failure and the kernel's packets of the drawn case.
`--json FILE` writes the same as JSON; `--keep DIR` also writes each failing
drawn case's whole `tfolab run --json` there (captured rows and the model's
timeline), to be read offline.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `tests` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fuzz import realistic, windows
from tests.fuzz.differential import Outcome, kernel_lines, run_judged, shrink
from tests.fuzz.space import Case, cases

# Each settings space: how its cases are drawn, and how a failing one is shrunk.
SPACES = {
    "uniform": (cases, shrink),
    "realistic": (realistic.realistic_cases, realistic.shrink_all),
    "windows": (windows.windows_cases, realistic.shrink_all),
}


def reason_group(reason: str) -> str:
    """A refusal's reason without its numbers: 'request_bytes = N takes N segments ...'."""
    text = reason.removeprefix("tfolab: ").split("; fix:")[0]
    text = re.sub(r"^scenario [\w-]+: ", "", text)
    return re.sub(r"\d+(\.\d+)?", "N", text)[:160]


def explore(
    seed: int,
    count: int,
    *,
    backend: str = "auto",
    budget_s: float = 1e9,
    shrinking: bool = True,
    timing: bool = True,
    space: str = "uniform",
    keep: Path | None = None,
) -> dict[str, object]:
    """Run `count` cases of `space` (SPACES) from `seed` and gather the figures; `keep`:
    a folder for each failing drawn case's run JSON."""
    draw_cases, shrink_case = SPACES[space]
    started = time.monotonic()
    results: list[tuple[Case, Outcome]] = []
    failures = []
    repeats: list[dict[str, object]] = []
    for case in draw_cases(seed, count):
        if time.monotonic() - started > budget_s:
            break
        outcome, repeated = run_judged(case, backend, timing=timing)
        results.append((case, outcome))
        again = ""
        if repeated is not None:
            again = f" (a {repeated.repeatable}, repeated)"
            repeats.append(
                {
                    "why": repeated.repeatable,
                    "command": case.command(),
                    "first": repeated.detail[:3],
                    "then": outcome.kind,
                    "stolen_ms": repeated.stolen_ms,
                }
            )
        print(f"{outcome.kind:9} {outcome.seconds:5.1f} s  {case.command()}{again}", flush=True)
        if not outcome.passed and outcome.kind not in ("unchecked", "held"):
            small, small_outcome, runs = (
                shrink_case(case, outcome, backend, timing=timing)
                if shrinking
                else (case, outcome, 0)
            )
            kept = None
            if keep is not None and outcome.report is not None:
                keep.mkdir(parents=True, exist_ok=True)
                kept = keep / f"seed{seed}-case{len(results)}.json"
                kept.write_text(json.dumps(outcome.report, indent=1))
            failures.append(
                {
                    "kind": outcome.kind,
                    "command": case.command(),
                    "shrunk": small.command(),
                    "shrink_runs": runs,
                    "detail": small_outcome.detail[:12],
                    # a shrink keeps any failure of the same kind, maybe another one:
                    # what the drawn case itself said is kept as well
                    "drawn_detail": outcome.detail[:12],
                    "kernel": kernel_lines(outcome),
                    "kept": None if kept is None else str(kept),
                }
            )
    kinds = Counter(outcome.kind for _, outcome in results)
    reasons = Counter(reason_group(o.detail[0]) for _, o in results if o.kind == "refused")
    delays = [case.delay_ms for case, _ in results]
    return {
        "seed": seed,
        "space": space,
        "backend": backend,
        "timing_judged": timing,
        "cases": len(results),
        "asked": count,
        "seconds": round(time.monotonic() - started, 1),
        "outcomes": dict(kinds),
        "refusals": dict(reasons.most_common()),
        "races": {
            "named": sum(o.races[0] for _, o in results),
            "used": sum(o.races[1] for _, o in results),
        },
        "ranges": {
            "delay_ms": [min(delays, default=0), max(delays, default=0)],
            "labs": dict(Counter(case.lab for case, _ in results)),
            "settings": dict(Counter(k for case, _ in results for k, _ in case.settings)),
        },
        "field_ranges": realistic.field_ranges([case for case, _ in results]),
        "failures": failures,
        "repeats": repeats,
        "held": [
            {"command": case.command(), "why": outcome.detail[0]}
            for case, outcome in results
            if outcome.kind == "held"
        ],
    }


def print_figures(figures: dict[str, object]) -> None:
    print(f"\nseed {figures['seed']}, backend {figures['backend']}: {figures['cases']} cases "
          f"of {figures['asked']} in {figures['seconds']} s")  # fmt: skip
    print(f"outcomes: {figures['outcomes']}")
    print(f"races named / used: {figures['races']}")
    held = list(figures.get("held", []))  # type: ignore[call-overload]
    print(f"not judged, the link held in both runs: {len(held)}")
    for case in held:
        print(f"  {case['command']}: {case['why']}")
    repeated = list(figures["repeats"])  # type: ignore[call-overload]
    print(f"measured again: {len(repeated)}")
    for repeat in repeated:
        host = f" [the hypervisor took {repeat['stolen_ms']:.0f} ms]" if repeat["stolen_ms"] else ""
        print(
            f"  {repeat['why']}: {repeat['command']} -> {repeat['then']}: "
            f"{repeat['first'][0]}{host}"
        )
    print(f"ranges: {figures['ranges']}")
    realistic.print_ranges(dict(figures["field_ranges"]))  # type: ignore[call-overload]
    print("refused, by reason:")
    for reason, n in dict(figures["refusals"]).items():  # type: ignore[call-overload]
        print(f"  {n:4}  {reason}")
    for failure in figures["failures"]:  # type: ignore[attr-defined]
        print(f"\n{failure['kind']}: {failure['shrunk']}")
        print(f"  (drawn as: {failure['command']})")
        for line in failure["detail"]:
            print(f"    {line}")
        if failure["shrunk"] != failure["command"]:
            print("  the drawn case itself said:")
            for line in failure["drawn_detail"]:
                print(f"    {line}")
        for line in failure["kernel"]:
            print(f"  {line}")
        if failure["kept"]:
            print(f"  its run JSON: {failure['kept']}")


def main(argv: list[str] | None = None, *, space: str = "uniform") -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--space", default=space, choices=sorted(SPACES))
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--backend", default="auto", choices=["auto", "netem", "nfqueue"])
    parser.add_argument("--budget-s", type=float, default=1e9)
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument(
        "--no-timing", action="store_true", help="judge packets and counters, not times (CI's VM)"
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument("--keep", type=Path, help="a folder for each failing case's run JSON")
    args = parser.parse_args(argv)
    figures = explore(
        args.seed,
        args.cases,
        backend=args.backend,
        budget_s=args.budget_s,
        shrinking=not args.no_shrink,
        timing=not args.no_timing,
        space=args.space,
        keep=args.keep,
    )
    print_figures(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0 if not figures["failures"] else 1


if __name__ == "__main__":
    sys.exit(main())
