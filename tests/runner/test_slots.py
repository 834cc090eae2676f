"""Measurement slots between real processes: first come first served, "K ahead", and a
SIGKILL frees a slot (or a place in line) at once, across users and user namespaces.

Each test uses a slot directory of its own (TFOLAB_SLOTS=1 there), so nothing here
touches the machine-wide one or waits for other runs.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unprivileged import AS_NOBODY
from tfolab.core.errors import UserError
from tfolab.core.slots import SIZE_ENV, SlotTable

HOLDER = ["-m", "tests.runner.slot_holder"]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def slot_dir() -> Iterator[Path]:
    # Under /tmp (not pytest's 0700 folder): other users must reach it.
    base = Path(tempfile.mkdtemp(prefix="tfolab-slots-test-"))
    os.chmod(base, 0o755)
    yield base / "slots"
    shutil.rmtree(base, ignore_errors=True)


class Holder:
    def __init__(self, directory: Path, prefix: tuple[str, ...] = ()) -> None:
        env = dict(os.environ, **{SIZE_ENV: "1"}, PYTHONPATH=str(ROOT))
        self.process = subprocess.Popen(
            [*(prefix or (sys.executable,)), *HOLDER, str(directory)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        self.lines: list[str] = []

    def next_line(self, timeout_s: float = 20.0) -> str:
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        import selectors

        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            if not selector.select(max(deadline - time.monotonic(), 0)):
                raise AssertionError(f"no line in {timeout_s} s; so far {self.lines}")
        line = self.process.stdout.readline().strip()
        if not line:
            err = self.process.stderr.read() if self.process.stderr else ""
            raise AssertionError(f"the holder ended: {err[-500:]}")
        self.lines.append(line)
        return line

    def wait_for_hold(self, timeout_s: float = 20.0) -> str:
        while not (line := self.next_line(timeout_s)).startswith("HOLD"):
            pass
        return line

    def release(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)


def test_first_come_first_served_with_places_in_line(slot_dir: Path) -> None:
    first = Holder(slot_dir)
    assert first.wait_for_hold().startswith("HOLD 0")
    second = Holder(slot_dir)
    assert second.next_line() == "WAIT 0"  # next in line
    third = Holder(slot_dir)
    assert third.next_line() == "WAIT 1"
    first.release()
    assert second.wait_for_hold().endswith(" 0")  # it joined with nobody waiting ahead
    assert third.next_line() == "WAIT 0"  # the line moved
    second.release()
    assert third.wait_for_hold().endswith(" 1")
    third.release()


def test_sigkill_of_the_holder_frees_the_slot_within_a_second(slot_dir: Path) -> None:
    holder = Holder(slot_dir)
    holder.wait_for_hold()
    waiter = Holder(slot_dir)
    assert waiter.next_line() == "WAIT 0"
    killed = time.monotonic()
    holder.kill()
    waiter.wait_for_hold()
    assert time.monotonic() - killed < 1.0
    waiter.release()


def test_sigkill_of_a_waiter_does_not_block_the_line(slot_dir: Path) -> None:
    holder = Holder(slot_dir)
    holder.wait_for_hold()
    middle = Holder(slot_dir)
    assert middle.next_line() == "WAIT 0"
    last = Holder(slot_dir)
    assert last.next_line() == "WAIT 1"
    middle.kill()
    assert last.next_line() == "WAIT 0"  # the dead ticket no longer counts
    holder.release()
    last.wait_for_hold()
    last.release()


def test_the_slot_count_is_the_directorys(slot_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv(SIZE_ENV, "1")
    assert SlotTable.open(slot_dir).size == 1
    monkeypatch.setenv(SIZE_ENV, "3")
    with pytest.raises(UserError, match="were made with 1"):
        SlotTable.open(slot_dir)
    monkeypatch.setenv(SIZE_ENV, "zero")
    with pytest.raises(UserError, match="not a slot count"):
        SlotTable.open(slot_dir)


def test_root_nobody_and_a_user_namespace_share_the_slots(
    slot_dir: Path, nobody_python: str
) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("util-linux unshare is not installed")
    root = Holder(slot_dir)  # root makes the directory and its files
    root.wait_for_hold()
    userns = ("unshare", "--user", "--map-root-user", "--net")
    in_namespace = Holder(slot_dir, (*AS_NOBODY, *userns, nobody_python))
    assert in_namespace.next_line() == "WAIT 0"
    plain = Holder(slot_dir, (*AS_NOBODY, nobody_python))
    assert plain.next_line() == "WAIT 1"
    root.kill()
    in_namespace.wait_for_hold()
    in_namespace.release()
    plain.wait_for_hold()
    plain.release()
