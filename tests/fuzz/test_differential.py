"""The differential fuzzer in the suite: random settings, the model against the kernel.

A small fixed-seed set runs with the README's test command; `-m fuzz` runs a
larger one (TFOLAB_FUZZ_SEED, TFOLAB_FUZZ_CASES, TFOLAB_FUZZ_BUDGET_S, and
TFOLAB_FUZZ_BACKEND and TFOLAB_FUZZ_TIMING=off for CI's emulated VM) and
prints the figures. Every case must agree with the kernel packet
for packet, or be refused up front with one line; a failure is shrunk and
reported as the one `tfolab run` command that reproduces it.
"""

from __future__ import annotations

import os
import time
import warnings

import pytest

from tests.conftest import LabMachine
from tests.environment import require_or_skip
from tests.fuzz.differential import Outcome, run_judged, shrink
from tests.fuzz.report import explore, print_figures
from tests.fuzz.space import Case, cases, setting_names

SMALL_SEED = 20261124
SMALL_CASES = 30


def _check(case: Case, outcome: Outcome) -> None:
    if outcome.kind == "unchecked":
        require_or_skip("packet capture", outcome.detail[0])
    if outcome.passed:
        return
    small, small_outcome, runs = shrink(case, outcome)
    details = "\n    ".join(small_outcome.detail[:10])
    pytest.fail(
        f"{outcome.kind}: {small.command()}\n  (shrunk in {runs} runs from: {case.command()})"
        f"\n    {details}",
        pytrace=False,
    )


@pytest.mark.parametrize("case", cases(SMALL_SEED, SMALL_CASES), ids=lambda c: c.command())
def test_the_kernel_agrees_or_the_case_is_refused(case: Case, delaying_machine: LabMachine) -> None:
    outcome, repeated = run_judged(case)
    if repeated is not None:
        warnings.warn(
            f"timing-only miss repeated once ({outcome.kind} the second time): "
            f"{case.command()}: {repeated.detail[0]}",
            stacklevel=1,
        )
    _check(case, outcome)


@pytest.mark.fuzz
def test_a_larger_budget(delaying_machine: LabMachine) -> None:
    seed = int(os.environ.get("TFOLAB_FUZZ_SEED", "1"))
    count = int(os.environ.get("TFOLAB_FUZZ_CASES", "60"))
    budget = float(os.environ.get("TFOLAB_FUZZ_BUDGET_S", "900"))
    backend = os.environ.get("TFOLAB_FUZZ_BACKEND", "auto")
    timing = os.environ.get("TFOLAB_FUZZ_TIMING", "on") != "off"
    started = time.monotonic()
    figures = explore(seed, count, backend=backend, budget_s=budget, timing=timing)
    print_figures(figures)
    assert figures["cases"], f"no case ran within {budget} s"
    failures = figures["failures"]
    assert not failures, (
        "\n".join(
            f"{f['kind']}: {f['shrunk']}\n    " + "\n    ".join(f["detail"])  # type: ignore[index]
            for f in failures  # type: ignore[attr-defined]
        )
        + f"\n({time.monotonic() - started:.0f} s)"
    )


def test_the_space_covers_every_setting_and_lab() -> None:
    drawn = cases(7, 400)
    assert {name for case in drawn for name, _ in case.settings} == set(setting_names())
    assert {case.lab for case in drawn} == {"handshake", "fastopen", "delack"}
    delays = [case.delay_ms for case in drawn]
    assert min(delays) == 0 and max(delays) > 900
    assert cases(7, 400) == drawn  # the same seed, the same cases


def test_a_shrunk_failure_also_shows_what_the_drawn_case_said(capsys) -> None:
    """A shrink keeps any failure of the same kind: CI once showed only a D = 0 window
    miss for a case drawn at D = 160.5 whose own disagreement was never printed."""
    figures = {
        "seed": 1, "backend": "netem", "cases": 1, "asked": 1, "seconds": 1.0,
        "outcomes": {"disagreed": 1}, "races": {"named": 0, "used": 0},
        "timing_repeats": [], "ranges": {}, "field_ranges": {}, "refusals": {},
        "failures": [{
            "kind": "disagreed",
            "command": "tfolab run fastopen --delay 160.5",
            "shrunk": "tfolab run fastopen --delay 0",
            "shrink_runs": 3,
            "detail": ["the shrunk case's sentence"],
            "drawn_detail": ["the drawn case's sentence"],
        }],
    }  # fmt: skip
    print_figures(figures)
    out = capsys.readouterr().out
    assert "the shrunk case's sentence" in out and "the drawn case's sentence" in out
