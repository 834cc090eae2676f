"""Lost SYNs for real: the NFQUEUE delayer drops the packets `drop` names, the kernel's
SYN timer sends them again, and the capture, the counters and the headline agree with
the model (syn_timer.py).

Under the timing lock, like every real run. Skips with the reason where there is no lab
namespace or no NFQUEUE delayer.
"""

from __future__ import annotations

import pytest

from tests.conftest import TIMING, LabMachine, run_tfolab
from tests.labs.lossy_runs import lossy_run as _run
from tfolab.core.native import optional_executable
from tfolab.runner.backends import likely_backend


@TIMING
def test_two_lost_syns_cost_two_timeouts(lab_machine: LabMachine) -> None:
    """The issue's demonstration at D = 13 ms: the first iteration's SYN and its first
    retransmission are lost; connect() waits two SYN timeouts (2 s on 6.18, whose first
    timeouts stay at 1 s; 3 s on 6.1), the second iteration none."""
    scenario = _run("--set", "drop=client:1@1,client:2@1", "--delay", "13", "--iterations", "2")
    first = [r for r in scenario["captured"] if r["connection"] == 1 and r["sender"] == "client"]
    syns = [r for r in first if r["flags"] == ["SYN"]]
    assert [r.get("lost", False) for r in syns] == [True, True, False]
    assert scenario["counters"]["TCPSynRetrans"] == scenario["counters"]["TCPTimeouts"] == 2
    assert scenario["counter_diff"] == []
    one, two = scenario["iterations"]
    assert one["predicted_ms"] > 2000 + 4 * 13 and two["predicted_ms"] < 100


@TIMING
def test_a_lost_syn_without_delay(lab_machine: LabMachine) -> None:
    """At D = 0 the delayer still drops by order (it releases every other packet at once)."""
    scenario = _run("--set", "drop=client:1", "--delay", "0", "--iterations", "1")
    assert [r.get("lost", False) for r in scenario["captured"] if r["flags"] == ["SYN"]] == [
        True,
        False,
    ]
    assert scenario["counter_diff"] == []


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--backend", "none", "--delay", "0"), "cannot lose packets"),
        (("--set", "drop=client:1@3", "--iterations", "2"), "names iteration 3"),
    ],
)
def test_a_drop_the_run_cannot_make_is_refused_before_anything_starts(
    args: tuple[str, ...], says: str
) -> None:
    done = run_tfolab("run", "handshake", "--scenario", "plain", "--set", "drop=client:1", *args)
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("tfolab: ") and says in line


def test_netem_with_a_drop_needs_netem_itself(lab_machine: LabMachine) -> None:
    """A lossy run on --backend netem puts the delayer behind netem (runner/backends): where
    netem works that is the backend it gets (tests/netem runs every lossy scenario through
    it); on a kernel without netem it is refused with netem's own reason, before anything
    starts."""
    if lab_machine.netem:
        delayer = optional_executable("tfo-delay")
        assert likely_backend("netem", 5.0, delayer, drops=True) == "netem"
        return
    done = run_tfolab(
        *("run", "handshake", "--scenario", "plain", "--set", "drop=client:1"),
        *("--backend", "netem", "--delay", "5"),
    )
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("tfolab: --backend netem: ") and "netem" in line.removeprefix(
        "tfolab: --backend netem: "
    )


@TIMING
def test_a_lost_synack_is_sent_again_by_the_first_of_two_timers(lab_machine: LabMachine) -> None:
    """drop=server:1 at D = 13 ms: the server's SYN-ACK timer and the client's SYN timer
    both end about 1 s later, in buckets the jiffies counter places; either way the capture
    agrees with the model's outcome for that bucket (synack_timer.py, a named race)."""
    scenario = _run("--set", "drop=server:1", "--delay", "13", "--iterations", "2")
    for connection in (1, 2):
        synacks = [
            r for r in scenario["captured"]
            if r["connection"] == connection and r["flags"] == ["SYN", "ACK"]
        ]  # fmt: skip
        assert synacks[0].get("lost") and not any(r.get("lost") for r in synacks[1:])
    assert scenario["counter_diff"] == []
    assert scenario["races"]["named"] >= 2  # one wheel race per connection


@TIMING
def test_a_round_trip_past_the_syn_timer_agrees(lab_machine: LabMachine) -> None:
    """The issue's `--delay 600 --iterations 2`: the SYN is sent again before the SYN-ACK
    arrives, the server answers it (or its own timer does first), and the client answers
    each SYN-ACK after the handshake with a challenge ACK, at most one per 500 ms."""
    scenario = _run("--delay", "600", "--iterations", "2")
    syns = [r for r in scenario["captured"] if r["flags"] == ["SYN"]]
    assert [r["connection"] for r in syns] == [1, 1, 2, 2]
    assert scenario["counters"]["TCPChallengeACK"] == 2
    assert scenario["counter_diff"] == []


@TIMING
def test_a_lost_syn_data_is_sent_again_bare(lab_machine: LabMachine) -> None:
    """Fast Open with a cookie, the first iteration's SYN-data lost: the SYN goes again
    without data or option, the data follows the SYN-ACK (TCPFastOpenActiveFail), and
    the next connection sends SYN-data again (the cache kept its cookie)."""
    scenario = _run(
        "--set", "drop=client:1@1", "--delay", "13", "--iterations", "2",
        lab="fastopen", scenario="cookie",
    )  # fmt: skip
    syns = [r for r in scenario["captured"] if r["flags"] == ["SYN"]]
    assert [(r["connection"], r["length"], r.get("lost", False)) for r in syns] == [
        (1, 16, True),
        (1, 0, False),
        (2, 16, False),
    ]
    assert scenario["counters"]["TCPFastOpenActiveFail"] == 1
    assert scenario["counter_diff"] == []


@TIMING
def test_a_fast_open_round_trip_past_the_syn_timer_agrees(lab_machine: LabMachine) -> None:
    """Fast Open with a cookie at D = 600: the SYN-data's timer sends the SYN again bare,
    the child's own SYN-ACK timer (tcp_fastopen_synack_timer) and the SYN again
    (tcp_check_req) each send the SYN-ACK again with the first one's window, and the
    SYN-ACK that acks the data still counts Fast Open as working."""
    scenario = _run("--delay", "600", "--iterations", "1", lab="fastopen", scenario="cookie")
    rows = [r for r in scenario["captured"] if r["connection"] == 1]
    syns = [
        (r["length"], r["options"][-1].startswith("TFO")) for r in rows if r["flags"] == ["SYN"]
    ]
    assert syns == [(16, True), (0, False)]
    synacks = [(r["ack"], r["window"]) for r in rows if r["flags"] == ["SYN", "ACK"]]
    assert len(synacks) == 3 and len(set(synacks)) == 1
    counters = scenario["counters"]
    assert counters["TCPFastOpenActive"] == 1 and counters["TCPFastOpenActiveFail"] == 0
    assert scenario["counter_diff"] == []


@TIMING
def test_a_lost_fast_open_child_syn_ack_and_its_dropped_answer(lab_machine: LabMachine) -> None:
    """drop=server:1@1 at D = 13: the child's answer reaches a client still in SYN_SENT,
    which drops it; the SYN again and the child's own timer repair the handshake, and the
    answer goes again when the retransmission timer the ACK of the SYN-ACK re-armed fires
    (tcp_rcv_synrecv_state_fastopen -> tcp_rearm_rto; retransmit.py)."""
    scenario = _run(
        "--set", "drop=server:1@1", "--delay", "13", "--iterations", "1",
        lab="fastopen", scenario="cookie",
    )  # fmt: skip
    server = [r for r in scenario["captured"] if r["connection"] == 1 and r["sender"] == "server"]
    synacks = [r.get("lost", False) for r in server if r["flags"] == ["SYN", "ACK"]]
    assert synacks[0] and not any(synacks[1:])
    answers = [r["t_ms"] for r in server if r["length"] > 0]
    assert len(answers) == 2 and answers[1] - answers[0] > 1000 + 200
    assert scenario["counters"]["TCPFastOpenActive"] == 1
    assert scenario["counter_diff"] == []
