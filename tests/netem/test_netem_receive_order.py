"""netem keeps a socket's packets in order: the backend steers lo's receiving to one CPU.

Behind netem, whichever CPU runs the qdisc when a packet is due hands it to lo's
receive path on that CPU; CI's VM once received a client's FIN before the ACK built
ahead of it (docs/TCP-NOTES.md, "lo's per-CPU backlogs"). The netem backend,
installed as a run installs it, must leave every packet received on one CPU,
whichever CPU sent it. This kernel has no netem: CI's VM runs this (`-m netem`).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import LabMachine
from tests.environment import require_or_skip
from tests.runner.test_receive_order import probe

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


CHOOSE_AS_NOBODY = """
from tfolab.core.errors import UserError
from tfolab.core.privileges import drop_to, find_account
from tfolab.runner.backends import likely_backend
drop_to(find_account("nobody"))
try:
    likely_backend("netem", 1.0, None)
except UserError as refused:
    print("refused:", refused.reason, "| fix:", refused.fix)
print("auto:", likely_backend("auto", 1.0, "tfo-delay"))
"""


def test_netem_is_refused_up_front_where_tfolab_is_not_root(lab_machine: LabMachine) -> None:
    """The parent's cheap look, as an ordinary user: netem refused before anything
    starts, with its fix; auto picks NFQUEUE instead."""
    if not lab_machine.netem:
        require_or_skip("netem", f"this kernel has none usable ({lab_machine.why_no_delay})")
    done = subprocess.run(
        [sys.executable, "-c", CHOOSE_AS_NOBODY], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    refused, auto = done.stdout.strip().splitlines()
    assert refused.startswith("refused: --backend netem: netem needs root here"), refused
    assert "--backend nfqueue" in refused, refused
    assert auto == "auto: nfqueue"
