"""netem keeps a socket's packets in order: the backend steers lo's receiving to one CPU.

Behind netem, whichever CPU runs the qdisc when a packet is due hands it to lo's
receive path on that CPU; CI's VM once received a client's FIN before the ACK built
ahead of it (docs/TCP-NOTES.md, "lo's per-CPU backlogs"). The netem backend,
installed as a run installs it, must leave every packet received on one CPU,
whichever CPU sent it. This kernel has no netem: CI's VM runs this (`-m netem`).
"""

from __future__ import annotations

import os
import shutil

import pytest

from tests.conftest import LabMachine
from tests.environment import require_or_skip
from tests.runner.test_receive_order import probe
from tests.runner.test_user_namespace import in_user_namespace

pytestmark = pytest.mark.netem


def test_netem_receives_every_packet_on_one_cpu(lab_machine: LabMachine) -> None:
    if not lab_machine.netem:
        require_or_skip("netem", f"this kernel has none usable ({lab_machine.why_no_delay})")
    if len(os.sched_getaffinity(0)) < 2:
        require_or_skip("two CPUs", "one CPU cannot receive out of order")
    result = probe("netem")
    lowest = min(os.sched_getaffinity(0))
    assert isinstance(result["map"], str)
    assert int(result["map"].replace(",", ""), 16) == 1 << lowest
    receiving = result["receiving"]
    assert isinstance(receiving, dict)
    assert set(receiving.values()) == {lowest}, receiving


def test_netem_is_refused_up_front_in_a_user_namespace(lab_machine: LabMachine) -> None:
    if not lab_machine.netem:
        require_or_skip("netem", f"this kernel has none usable ({lab_machine.why_no_delay})")
    if shutil.which("unshare") is None:
        require_or_skip("unshare", "util-linux unshare is not installed")
    done = in_user_namespace("run", "handshake", "--backend", "netem", "--delay", "1")
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "netem needs root here" in line and "--backend nfqueue" in line, line
