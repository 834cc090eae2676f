"""Cases the differential fuzzer shrank, run for real: each agrees packet for packet.

Each names the rule that made it agree, and the delay it runs at (D = 0 runs
on any backend; a delay needs the NFQUEUE stand-in or netem).
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import TIMING, LabMachine, run_tfolab
from tests.environment import require_or_skip
from tests.timing import check_packets

CASES = {
    # the runner changes the key before a kept connection's first SYN, as the model does
    "key rotation on a kept connection": (
        "0", "fastopen", "--scenario", "invalid-cookie", "--iterations", "1",
        "--set", "fresh_connection_each_iteration=false",
    ),
    # tcp_cwnd_test: half the congestion window per skb (5 + 5 segments)
    # (at D = 2: at D = 0 the order of the two packets' ACKs is a race, see TCP-NOTES)
    "a 690-byte write at MTU 128": (
        "2", "delack", "--scenario", "single-write", "--iterations", "1",
        "--set", "first_write_bytes=684", "--set", "mtu=128",
    ),
    # truesize_adjust: a clone grows rcv_ssthresh by 2 x advmss (window 64, not 44)
    "a small request at MTU 43388": (
        "0", "handshake", "--iterations", "1", "--set", "mtu=43388", "--set", "request_bytes=298",
    ),
    # __tcp_sock_set_quickack: tcp_cleanup_rbuf(sk, 1) ACKs two full segments before the
    # read, its window counting them (round 4: 98 at window scale 10, not the read's 101)
    "TCP_QUICKACK before the read of two full segments": (
        "62.27", "delack", "--scenario", "quickack", "--iterations", "4",
        "--set", "cork=true", "--set", "mtu=3833", "--set", "second_write_bytes=7561",
    ),
    # lock points with a delay: a reader (or accept()) may take or let go of its socket
    # between the two GSO packets of one write, which the delayer keeps microseconds apart
    "a 48839-byte request at lo's MTU, D = 0.07": (
        "0.07", "handshake", "--iterations", "4", "--set", "request_bytes=48839",
    ),
}  # fmt: skip


@TIMING
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_shrunk_case_agrees(name: str, lab_machine: LabMachine) -> None:
    """Packets and counters agree (a plain failure); a late arrival alone is a TimingMiss
    (tests/timing.py), as in every real-run test: series run 2 on 8086dd7 had every
    segment of one D = 0 connection arrive 3.5 to 5 ms late, and nothing else wrong."""
    delay, *args = CASES[name]
    if delay != "0" and lab_machine.delay_backend == "none":
        require_or_skip("delay backend", lab_machine.why_no_delay)
    done = run_tfolab("run", *args, "--delay", delay, "--json")
    assert done.returncode in (0, 1), done.stderr
    result = json.loads(done.stdout)
    if "capture" in result:
        require_or_skip("packet capture", result["capture"])
    (scenario,) = result["scenarios"]
    assert scenario["captured"]
    assert scenario["counter_diff"] == [], "\n".join(scenario["counter_diff"])
    check_packets([scenario])
