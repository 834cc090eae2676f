"""The host is exactly as it was after lab runs, and after SIGKILL mid-run.

Checked (tests/host/state.py): the nf_tables ruleset read over netlink, the
legacy x_tables, the qdiscs and state of every interface, named namespaces,
every sysctl tfolab writes, the host's TFO cookie cache, and every process the
run started (server, delayer) together with the namespace they held.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import LabMachine, run_tfolab
from tests.host.state import changes, snapshot
from tests.processes import command_of, running
from tests.served_slots import slots_by_flag


def cookie_cache(shown: str) -> list[str]:
    """The TFO part of `ip tcp_metrics show`: each peer's fo_* fields. Its rtt and cwnd
    move with any connection on the host's loopback (another session's served UI)."""
    found = []
    for line in shown.splitlines():
        fields = line.split()
        fastopen = [f"{k} {v}" for k, v in itertools.pairwise(fields) if "fo_" in k]
        if fastopen and "source" in fields:
            found.append(f"{fields[0]} source {fields[fields.index('source') + 1]} {fastopen}")
    return found


def host_state() -> dict[str, list[str]]:
    """The session guard's snapshot (nf_tables over netlink, x_tables, qdiscs of every
    interface, links, named namespaces, every sysctl tfolab writes) and the host's TFO
    cookie cache."""
    found = snapshot()
    if shutil.which("ip") is not None:
        shown = subprocess.run(
            ["ip", "tcp_metrics", "show"], capture_output=True, text=True, timeout=20
        ).stdout
        found["tfo cookie cache"] = sorted(cookie_cache(shown))
    return found


def descendants(pid: int) -> set[int]:
    found: set[int] = set()
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def netns_of(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def holders_of(namespaces: set[str]) -> list[int]:
    holders = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and netns_of(int(entry.name)) in namespaces:
            holders.append(int(entry.name))
    return holders


def wait_for(predicate, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_runs_leave_the_host_unchanged(delaying_machine: LabMachine) -> None:
    before = host_state()
    for lab in ("handshake", "fastopen", "delack"):
        done = run_tfolab("run", lab, "--delay", "2", "--iterations", "2", "--json")
        assert done.returncode in (0, 1), done.stderr
    assert changes(before, host_state()) == []


@pytest.mark.parametrize("victim", ["runner", "tfolab"])
def test_sigkill_mid_run_leaves_nothing_behind(delaying_machine: LabMachine, victim: str) -> None:
    before = host_state()
    host_netns = netns_of(os.getpid())
    args, environment = slots_by_flag(
        ["run", "delack", "--delay", "10", "--iterations", "60"], None
    )
    top = subprocess.Popen(
        [sys.executable, "-m", "tfolab", *args],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert top.stderr is not None
        started = top.stderr.readline()  # "lab network ready ..." once the server is up
        assert "lab network ready" in started, started
        family = descendants(top.pid)
        runner = min(family)
        namespaces = {ns for pid in family if (ns := netns_of(pid)) and ns != host_netns}
        assert namespaces, "the run's processes should live in a namespace of their own"
        names = {command_of(p) for p in family}
        assert {"tfo-echo-server", "tfo-delay"} & names
        os.kill(runner if victim == "runner" else top.pid, signal.SIGKILL)
        assert wait_for(lambda: not any(running(p) for p in family)), (
            "a lab process outlived the kill"
        )
        assert wait_for(lambda: not holders_of(namespaces)), "the lab namespace is still held"
    finally:
        top.kill()
        top.wait(timeout=10)
    assert changes(before, host_state()) == []
