"""Without a delay a Fast Open child's answer may reach the client before its SYN-ACK;
the client drops it in SYN_SENT and the server's retransmission timer sends it again (an
"ahead" point, model/loop.py; the timer, model/retransmit.py).

CI's VM (Debian's 6.1, HZ 250, window scale 7), the VM fuzzer's seed 5252 case:
fastopen plain with client_fastopen=sendto and cork at D = 0, 3 connections. In
connection 2 the server's answer left 0.85 ms after its SYN-ACK (the SYN-ACK from the
softirq that took the SYN, the answer from the server's write() on the other CPU), and
reached the client first: still in SYN_SENT, it dropped a segment without SYN
(tcp_rcv_synsent_state_process) and acked the SYN-ACK alone (ack 1). The ACK gave the
child its first RTT sample and re-armed its retransmission timer with the RTO that sets,
rto_min and a few microseconds (tcp_synack_rtt_meas, tcp_rcv_synrecv_state_fastopen):
the answer came again 208 ms later. The rows are the ones the fuzzer printed.
"""

from __future__ import annotations

import pytest

from tests.labs import vm_captures
from tfolab.lab import packets
from tfolab.model import Segment, Simulation, Timer
from tfolab.model.loop import World
from tfolab.model.simulation import ModelInputError, with_lock_early

NAME = "fastopen-sendto-cork-d0-6.1-answer-ahead"
AHEAD = (2, "client", 1, "ahead")
SETTINGS = {"client_fastopen": "sendto", "cork": "true"}


def model(settings: dict[str, str] = SETTINGS, delay_ms: float = 0) -> Simulation:
    return vm_captures.model("fastopen", "plain", settings, delay_ms=delay_ms, iterations=3)


def server_data(sim: Simulation, connection: int) -> list[Segment]:
    return [
        e for e in sim.events
        if isinstance(e, Segment) and e.connection == connection and e.sender == "server"
        and e.length
    ]  # fmt: skip


def test_the_capture_agrees_with_the_answer_ahead() -> None:
    comparison = packets.compare(model(), vm_captures.load(NAME)[1], {})
    assert comparison.sentences == []
    assert comparison.simulation.lock_early == frozenset({AHEAD})
    assert comparison.races_used >= 1


def test_the_dropped_answer_comes_again_when_the_timer_fires() -> None:
    sim = with_lock_early(model(), frozenset({AHEAD}))
    first, again = server_data(sim, 2)
    assert (first.seq, first.length, again.seq, again.length) == (1, 16, 1, 16)
    assert "tcp_retransmit_timer" in again.explanation
    client_acks = [
        (e.seq, e.ack) for e in sim.events
        if isinstance(e, Segment) and e.connection == 2 and e.sender == "client"
        and e.flags == ("ACK",)
    ]  # fmt: skip
    assert client_acks[0] == (17, 1)  # the SYN-ACK alone: the answer was dropped
    fired = next(
        e for e in sim.events if isinstance(e, Timer) and e.name == "rto" and e.action == "fired"
    )
    assert fired.id == again.caused_by
    # rto_min and the SYN-ACK's round trip, at least 1 us: 200.001 ms is 51 jiffies at HZ 250,
    # and the wheel runs a level-0 timer one jiffy after it expires (calc_index)
    armed = next(
        e for e in sim.events if isinstance(e, Timer) and e.name == "rto" and e.action == "armed"
    )
    assert "204 ms" in armed.explanation
    assert 204.0 < fired.time_ms - armed.time_ms <= 208.0


def test_without_the_point_the_capture_disagrees(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(World, "_ahead", lambda *args: False)
    sentences = packets.compare(model(), vm_captures.load(NAME)[1], {}).sentences
    assert any(
        "connection 2, server: the kernel sent ACK,PSH seq 1 ack 17 len 16" in s for s in sentences
    ), sentences


def test_only_without_a_delay_and_where_the_server_answers_at_once() -> None:
    assert not [p for p in model(delay_ms=5).lock_points if p.kind == "ahead"]
    # the SYN carries no data without a cookie, so the first connection has no point
    assert [p.key for p in model().lock_points if p.kind == "ahead"] == [
        (2, "client", 1, "ahead"), (3, "client", 1, "ahead")
    ]  # fmt: skip


def test_an_answer_of_several_segments_is_refused_up_front() -> None:
    """Its retransmission after the timer starts from a congestion window of one."""
    with pytest.raises(ModelInputError, match="may reach the client before its SYN-ACK"):
        model({**SETTINGS, "response_bytes": "20000", "mtu": "9000"})
