"""Proof that the CLI starts nothing: a recorder for every spawn point, and strace.

`record_spawns` replaces tfolab.runner.client.stream_events, asyncio's
subprocess call and subprocess.Popen by functions that record the call and
raise Spawned; `strace_or_skip` finds an strace that can trace here, and
`run_traced` runs `python -m tfolab ...` under it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.environment import require_or_skip
from tests.served_slots import slots_by_flag
from tfolab.runner import client


class Spawned(BaseException):
    """A runner was about to start: the test has failed.

    A BaseException, like KeyboardInterrupt, so that the CLI's internal-error
    handler (exit 3, cli/crash.py) lets it through to the test.
    """


def record_spawns(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Replace every way the CLI could start the runner; returns the calls made."""
    calls: list[object] = []

    def stream_events(job: object, **_: object) -> None:
        calls.append(job)
        raise Spawned(f"the runner would have started for {job}")

    async def create_subprocess_exec(*args: object, **_: object) -> None:
        calls.append(args)
        raise Spawned(f"a process would have started: {args}")

    def popen(*args: object, **_: object) -> None:
        calls.append(args)
        raise Spawned(f"a process would have started: {args}")

    monkeypatch.setattr(client, "stream_events", stream_events)
    monkeypatch.setattr(asyncio, "create_subprocess_exec", create_subprocess_exec)
    monkeypatch.setattr(subprocess, "Popen", popen)
    return calls


def strace_or_skip() -> str:
    strace = shutil.which("strace")
    if strace is None:
        require_or_skip("strace", "not installed (apt-get install strace)")
    probe = subprocess.run(
        [strace, "-f", "-qq", "-e", "trace=execve", "-o", "/dev/null", "true"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if probe.returncode != 0:
        require_or_skip("strace", f"cannot trace here: {probe.stderr.strip()[-200:]}")
    return strace


@dataclass
class Traced:
    done: subprocess.CompletedProcess[str]
    trace: str  # everything strace wrote
    elapsed_s: float

    @property
    def programs(self) -> list[str]:
        """Every execve the command and its children made."""
        return [line for line in self.trace.splitlines() if "execve(" in line]


def run_traced(
    tfolab_args: list[str],
    folder: Path,
    preexec_fn: Callable[[], None] | None = None,
    env: dict[str, str] | None = None,
) -> Traced:
    """`python -m tfolab ARGS` under strace (execve only, children too), or skip;
    `env`: variables added to this process's environment."""
    strace = strace_or_skip()
    trace = folder / "execve.txt"
    started = time.monotonic()
    command, environment = slots_by_flag(tfolab_args, dict(os.environ, **env) if env else None)
    done = subprocess.run(
        [strace, "-f", "-qq", "-e", "trace=execve", "-o", str(trace),
         sys.executable, "-m", "tfolab", *command],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=preexec_fn,
        env=environment,
    )  # fmt: skip
    return Traced(done, trace.read_text(), time.monotonic() - started)
