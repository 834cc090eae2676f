"""lo's receive steering (tfolab/runner/receive_order.py), for real in fresh namespaces.

Without it, lo receives each packet on the CPU that sends it; with it, on one CPU
whatever CPU sends, which is what keeps a socket's packets in order behind netem
(docs/TCP-NOTES.md, "lo's per-CPU backlogs"). The host's lo is never touched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import LabMachine
from tests.environment import require_or_skip
from tfolab.runner.receive_order import cpu_mask

PROBE = Path(__file__).with_name("receive_order_probe.py")
HOST_LO_MAP = Path("/sys/class/net/lo/queues/rx-0/rps_cpus")


def probe(how: str, *wrapper: str) -> dict[str, object]:
    done = subprocess.run(
        [*wrapper, sys.executable, str(PROBE), how],
        capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[2],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.fixture
def two_cpus_as_root() -> None:
    if os.geteuid() != 0:
        require_or_skip("root", "a network namespace of one's own needs root here")
    if len(os.sched_getaffinity(0)) < 2:
        require_or_skip("two CPUs", "one CPU cannot receive out of order")


def test_cpu_masks_are_the_kernels_bitmap_format() -> None:
    assert cpu_mask(0) == "00000001"
    assert cpu_mask(5) == "00000020"
    assert cpu_mask(32) == "00000001,00000000"
    assert cpu_mask(70) == "00000040,00000000,00000000"


def test_plain_lo_receives_on_the_sending_cpu(two_cpus_as_root: None) -> None:
    result = probe("plain")
    assert result["map"] == "0"
    receiving = result["receiving"]
    assert isinstance(receiving, dict)
    assert all(int(sender) == cpu for sender, cpu in receiving.items()), receiving


def test_steered_lo_receives_on_one_cpu_whoever_sends(two_cpus_as_root: None) -> None:
    host_map = HOST_LO_MAP.read_text()
    mounts = Path("/proc/self/mountinfo").read_text()
    result = probe("steer")
    lowest = min(os.sched_getaffinity(0))
    assert isinstance(result["map"], str)
    assert int(result["map"].replace(",", ""), 16) == 1 << lowest  # the kernel drops leading 0s
    receiving = result["receiving"]
    assert isinstance(receiving, dict)
    assert set(receiving.values()) == {lowest}, receiving
    # Only the lab's lo: the host's map and mounts are as they were.
    assert HOST_LO_MAP.read_text() == host_map
    assert Path("/proc/self/mountinfo").read_text() == mounts


def test_a_user_namespace_cannot_steer(two_cpus_as_root: None) -> None:
    if shutil.which("unshare") is None:
        require_or_skip("unshare", "util-linux unshare is not installed")
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", sys.executable, str(PROBE), "steer"],
        capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[2],
    )  # fmt: skip
    assert done.returncode != 0
    assert "PermissionError" in done.stderr and "Operation not permitted" in done.stderr


def test_only_the_machines_root_may_steer(two_cpus_as_root: None) -> None:
    """The cheap look the parent takes before a run: false for uid 0 of a user namespace."""
    if shutil.which("unshare") is None:
        require_or_skip("unshare", "util-linux unshare is not installed")
    ask = [
        sys.executable,
        "-c",
        "from tfolab.runner import receive_order as r; print(r.may_steer())",
    ]
    here = subprocess.run(ask, capture_output=True, text=True, timeout=60, check=True)
    inside = subprocess.run(
        ["unshare", "--user", "--map-root-user", *ask],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert (here.stdout.strip(), inside.stdout.strip()) == ("True", "False")


def test_the_nfqueue_backend_steers_lo(two_cpus_as_root: None, lab_machine: LabMachine) -> None:
    """At INPUT the delayer comes after lo's backlogs: a root lab steers lo to one CPU."""
    if not lab_machine.nfqueue:
        require_or_skip("NFQUEUE", lab_machine.why_no_delay)
    result = probe("nfqueue")
    assert isinstance(result["map"], str)
    assert int(result["map"].replace(",", ""), 16) == 1 << min(os.sched_getaffinity(0))
