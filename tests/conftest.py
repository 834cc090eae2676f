"""Shared fixtures: what this machine can do for real runs, probed once.

Tests that need root and network namespaces ask for `lab_machine` and are
skipped with the probe's reason elsewhere; they never silently pass.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

from tests.environment import require_or_skip
from tests.served_slots import slots_by_flag
from tests.timing import TimingMiss
from tfolab.core.slots import DIR_ENV

# Hypothesis profiles, registered before any test module builds its @settings (which
# inherit every field they leave unset from the profile loaded here). "ci", the default,
# is deterministic: every run draws the same examples and writes no example database
# (.hypothesis/examples), so the README's plain `python -m pytest` gives the same result
# every time. "dev" explores: fresh random examples each run (or --hypothesis-seed=N),
# ten times as many, and failures are saved and replayed first on the next run:
#     HYPOTHESIS_PROFILE=dev python -m pytest tests/model
settings.register_profile(
    "ci", max_examples=100, derandomize=True, database=None, deadline=None, print_blob=True
)
settings.register_profile("dev", max_examples=1000, derandomize=False, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Real timings on a shared 2-CPU VM: one rerun absorbs a hypervisor hiccup
# (a lone 3-6 ms stall seen about once in a few hundred runs); a systematic
# miss fails twice and still fails the test. Only a TimingMiss (tests/timing.py)
# is rerun: packets, counters, losses and leftovers fail the first time. Every
# rerun is listed at the end, and CI allows RERUN_BUDGET of them (tests/reruns.py).
TIMING = pytest.mark.flaky(reruns=1, only_rerun=[TimingMiss])

pytest_plugins = ["tests.reruns", "tests.host.guard", "tests.isolation"]


@dataclass(frozen=True)
class LabMachine:
    namespace: str
    netem: bool
    nfqueue: bool
    why_no_delay: str = ""

    @property
    def delay_backend(self) -> str:
        return "netem" if self.netem else "nfqueue" if self.nfqueue else "none"


@pytest.fixture
def root() -> None:
    """The test acts as root (another user, a folder's owner): an environment need."""
    if os.geteuid() != 0:
        require_or_skip("root", "the test becomes another user or changes owners")


@pytest.fixture(scope="session")
def lab_machine() -> LabMachine:
    from tfolab.runner.probe import ProbeFailed, run_probe

    try:
        report = run_probe()
    except ProbeFailed as err:
        # The probe always reports, even where namespaces are refused: no report is a bug.
        pytest.fail(f"the namespace probe crashed: {err}")
    if report.namespace_error is not None:
        require_or_skip("network namespaces", report.namespace_error)
    netem, nfqueue = report.netem, report.nfqueue
    why = f"netem: {netem.detail}; nfqueue: {nfqueue.detail}"
    return LabMachine(report.namespace or "", netem.works, nfqueue.works, why)


@pytest.fixture(scope="session")
def delaying_machine(lab_machine: LabMachine) -> LabMachine:
    if lab_machine.delay_backend == "none":
        require_or_skip("delay backend", lab_machine.why_no_delay)
    return lab_machine


def run_tfolab(
    *args: str, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    command, environment = slots_by_flag(list(args), env)
    return subprocess.run(
        [sys.executable, "-m", "tfolab", *command],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environment,
    )


@pytest.fixture
def cli_args(monkeypatch: pytest.MonkeyPatch) -> Callable[..., list[str]]:
    """`tfolab ARGS` for cli.main in this process, as run_tfolab gives them to a subprocess:
    as root, the session's slots folder by --slots-dir, out of this process's environment
    until the test ends (root takes no folder from its environment: tfolab.cli.root_env)."""

    def args_for(*args: str) -> list[str]:
        command, environment = slots_by_flag(list(args), None)
        if environment is not None:
            monkeypatch.delenv(DIR_ENV, raising=False)
        return command

    return args_for


@pytest.fixture(scope="session")
def nobody_python() -> Iterator[str]:
    """A Python that the user nobody can run tfolab with (tests/unprivileged.py), or skip.
    A venv made for it in /tmp is removed at the end of the session."""
    from tests.unprivileged import python_for_nobody

    python, why = python_for_nobody()
    if python is None:
        require_or_skip("root", f"no Python for the user nobody: {why}")
    yield python
    made = Path(python).parents[1]
    if made.name.startswith("tfolab-nobody-python-"):
        shutil.rmtree(made, ignore_errors=True)
