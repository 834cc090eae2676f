"""Idle CPUs poll while a lab measures (tfolab.runner.awake), read from the kernel's own
cpuidle counts: while a lab's turn holds its slot no CPU enters an idle state that halts;
once the turn is over, given back or killed with SIGKILL, they halt again. A bench's turn
asks for nothing, and another local user cannot ask at all.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.environment import require_or_skip
from tests.runner.holders import ROOT
from tests.runner.test_turn import Turn
from tfolab.runner import awake

CPUS = Path("/sys/devices/system/cpu")
WATCH_S = 0.3


def _halting_entries() -> int:
    """How many times, so far, any CPU entered a cpuidle state other than polling."""
    total = 0
    for state in CPUS.glob("cpu[0-9]*/cpuidle/state[0-9]*"):
        if (state / "name").read_text().strip() != "POLL":
            total += int((state / "usage").read_text())
    return total


def _halts_meanwhile() -> int:
    before = _halting_entries()
    time.sleep(WATCH_S)
    return _halting_entries() - before


def _holds_the_request(pid: int) -> bool:
    fds = Path(f"/proc/{pid}/fd")
    return any(os.readlink(fd) == awake.CPU_LATENCY_DEVICE for fd in fds.iterdir())


@pytest.fixture
def halting_cpus() -> None:
    """A machine whose idle CPUs halt through cpuidle, where this run may ask them not to."""
    permitted, why = awake.awake_permitted()
    if not permitted:
        require_or_skip("root", why)
    if _halts_meanwhile() == 0:
        pytest.skip("idle CPUs here never halt (another process holds a latency request?)")


def test_a_lab_turn_keeps_idle_cpus_polling_until_it_is_killed(
    slot_dir: Path, halting_cpus: None
) -> None:
    turn = Turn(slot_dir, "lab")
    try:
        turn.measuring()
        assert _holds_the_request(turn.process.pid)
        assert _halts_meanwhile() == 0
        turn.kill()  # SIGKILL: the kernel closes the device, and the request ends with it
        assert _halts_meanwhile() > 0
    finally:
        turn.kill()


def test_a_lab_turn_lets_the_cpus_halt_again_when_it_ends(
    slot_dir: Path, halting_cpus: None
) -> None:
    turn = Turn(slot_dir, "lab")
    try:
        turn.measuring()
        assert _halts_meanwhile() == 0
        turn.say("end")
        assert turn.after()["same_descriptors"]  # the device closed with the slot
        assert _halts_meanwhile() > 0
        turn.finish()
    finally:
        turn.kill()


def test_a_bench_turn_asks_for_nothing(slot_dir: Path, halting_cpus: None) -> None:
    turn = Turn(slot_dir, "bench")
    try:
        turn.measuring()
        assert not _holds_the_request(turn.process.pid)
        assert _halts_meanwhile() > 0
        turn.say("end")
        turn.after()
        turn.finish()
    finally:
        turn.kill()


def test_another_local_user_cannot_keep_the_cpus_awake(nobody_python: str) -> None:
    """The request is root's: a user's lab measures with idle states and says so."""
    if awake.cpuidle_driver() == "none":
        require_or_skip("cpuidle", "no cpuidle driver here: nothing to keep awake")
    asked = subprocess.run(
        [sys.executable, "-m", "tests.as_user", "nobody", nobody_python, "-c",
         "from tfolab.runner import awake; print(awake.hold(), awake.awake_permitted()[1])"],
        capture_output=True, text=True, cwd=ROOT, timeout=30, check=True,
    )  # fmt: skip
    held, note = asked.stdout.strip().split(" ", 1)
    assert held == "None"
    assert note.startswith("idle CPUs may halt while measuring (/dev/cpu_dma_latency is root's)")
