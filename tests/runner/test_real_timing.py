"""Real runs through the runner at D = 5, 10 and 25 ms one way (issue: lab network).

connect() returns at 2D and the first response byte arrives at 4D (within 1 ms
and 1.5 ms); a repeat TFO connection answers at 2D. These use whatever delay
backend `auto` picks here (NFQUEUE on kernels without netem).

Every exit-1 sentence is read: one that is not about time fails at once
(timing_only), before the times are checked; the CLI's own timing verdicts
(its bands, late arrivals) are then a TimingMiss (check_exit), after this
file's own time checks.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import TIMING, LabMachine, run_tfolab
from tests.environment import require_or_skip
from tests.timing import assert_near, check_exit, timing_only


@TIMING
@pytest.mark.parametrize("delay_ms", [5, 10, 25])
def test_handshake_connect_at_2d_first_byte_at_4d(
    delaying_machine: LabMachine, delay_ms: int
) -> None:
    done = run_tfolab("run", "handshake", "--delay", str(delay_ms), "--iterations", "3", "--json")
    timing_only(done)
    result = json.loads(done.stdout)
    assert result["backend"] == delaying_machine.delay_backend
    assert result["delay_ms"] == delay_ms
    for iteration in result["scenarios"][0]["iterations"]:
        assert_near(iteration["connect_ms"], 2 * delay_ms, 1.0, f"connect #{iteration['i']}")
        assert_near(iteration["measured_ms"], 4 * delay_ms, 1.5, f"first byte #{iteration['i']}")
    check_exit(done)


@TIMING
@pytest.mark.parametrize("delay_ms", [5, 10, 25])
def test_tfo_repeat_connection_answers_at_2d(delaying_machine: LabMachine, delay_ms: int) -> None:
    done = run_tfolab(
        "run",
        "fastopen",
        "--scenario",
        "cookie",
        "--delay",
        str(delay_ms),
        "--iterations",
        "2",
        "--json",
    )
    timing_only(done)
    scenario = json.loads(done.stdout)["scenarios"][0]
    assert scenario["counters"]["TCPFastOpenActive"] == 2
    assert scenario["counters"]["TCPFastOpenPassive"] == 2
    for iteration in scenario["iterations"]:
        assert_near(iteration["measured_ms"], 2 * delay_ms, 1.5, f"answer #{iteration['i']}")
    check_exit(done)


def test_setup_time_is_reported(delaying_machine: LabMachine) -> None:
    done = run_tfolab("run", "handshake", "--delay", "1", "--iterations", "1", "--json")
    timing_only(done)  # this test checks no time: a band missed at D = 1 ms is not its subject
    result = json.loads(done.stdout)
    assert 0 < result["setup_ms"] < 5000
    assert result["kernel"]


@TIMING
def test_a_fresh_machine_without_iptables_measures_through_nfqueue(
    delaying_machine: LabMachine,
) -> None:
    if not delaying_machine.nfqueue:
        require_or_skip("NFQUEUE", delaying_machine.why_no_delay)
    names = ("iptables", "iptables-nft", "iptables-legacy")
    path = os.pathsep.join(
        folder
        for folder in os.environ.get("PATH", "").split(os.pathsep)
        if not any((Path(folder) / name).exists() for name in names)
    )
    done = run_tfolab(
        "run", "handshake", "--delay", "10", "--backend", "nfqueue", "--iterations", "3", "--json",
        env={**os.environ, "PATH": path},
    )  # fmt: skip
    timing_only(done)
    result = json.loads(done.stdout)
    assert result["backend"] == "nfqueue"
    assert not any("iptables binary" in note for note in result.get("notes", []))
    for iteration in result["scenarios"][0]["iterations"]:
        assert_near(iteration["measured_ms"], 40.0, 2.0, f"first byte #{iteration['i']}")
    check_exit(done)


@TIMING
def test_nfqueue_holds_no_write_back_the_way_tcp_small_queues_would(
    delaying_machine: LabMachine,
) -> None:
    """A 65483-byte request at lo's MTU leaves as three GSO packets at once (skbs of
    32741 bytes). Held in OUTPUT, still charged to the socket, the third waited until
    the first left the queue (tcp_small_queue_check: D later). At the receiving end
    (INPUT, after loopback_xmit's skb_orphan) all three arrive together, as on netem,
    and the kernel agrees with the model packet for packet."""
    if not delaying_machine.nfqueue:
        require_or_skip("NFQUEUE", delaying_machine.why_no_delay)
    done = run_tfolab(
        "run", "handshake", "--delay", "5", "--backend", "nfqueue", "--iterations", "1",
        "--set", "request_bytes=65483", "--json",
    )  # fmt: skip
    timing_only(done)
    (scenario,) = json.loads(done.stdout)["scenarios"]
    request = [row for row in scenario["captured"] if row["sender"] == "client" and row["length"]]
    assert [row["length"] for row in request] == [32741, 32741, 1]
    # arrival = the delayer's verdict: all three D after the same send, well under D apart
    assert request[-1]["t_ms"] - request[0]["t_ms"] < 1.0
    assert scenario["packet_disagreements"] == []
    check_exit(done)
