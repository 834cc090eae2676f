"""Without a delay the client's first data may overtake its handshake ACK, and the
server answers the late ACK with a duplicate (an "overtaken" point, model/loop.py;
the out-of-window rule, model/receive.py).

CI's VM (Debian's 6.1, HZ 250, window scale 7), the VM fuzzer's seed 5196 case:
handshake plain with client_fastopen=connect at D = 0, 5 connections. In connection 2
the server acked 17 twice, 0.18 ms apart, before its answer: the client's handshake
ACK (sent from the softirq that took the SYN-ACK) and its request (sent by write() on
the other CPU) were queued on two CPUs' backlogs, and the request reached the
server's request socket first. It completed the handshake itself (tcp_check_req,
tcp_child_process) and was acked at once (quick-ACK mode, rcv_wup = 17); the
handshake ACK, which ends at 1, then failed tcp_sequence (tcp_validate_incoming) and
tcp_send_dupack answered it. The rows are the ones the fuzzer printed.
"""

from __future__ import annotations

import pytest

from tests.labs import vm_captures
from tfolab.lab import packets
from tfolab.model import Segment, Simulation
from tfolab.model.loop import World
from tfolab.model.simulation import with_lock_early

NAME = "handshake-connect-d0-6.1-overtaken"
OVERTAKEN = (2, "server", 1, "overtaken")


def model() -> Simulation:
    return vm_captures.model(
        "handshake", "plain", {"client_fastopen": "connect"}, delay_ms=0, iterations=5
    )


def server_acks(sim: Simulation, connection: int) -> list[tuple[int, int | None]]:
    return [
        (e.seq, e.ack)
        for e in sim.events
        if isinstance(e, Segment) and e.connection == connection and e.sender == "server"
        and e.length == 0 and e.flags == ("ACK",)
    ]  # fmt: skip


def test_the_capture_agrees_with_the_overtaken_ack() -> None:
    comparison = packets.compare(model(), vm_captures.load(NAME)[1], {})
    assert comparison.sentences == []
    assert comparison.simulation.lock_early == frozenset({OVERTAKEN})
    assert comparison.races_used >= 1


def test_the_late_ack_draws_a_duplicate_before_the_answer() -> None:
    sim = model()
    assert server_acks(sim, 2) == [(1, 17)]
    overtaken = with_lock_early(sim, frozenset({OVERTAKEN}))
    assert server_acks(overtaken, 2) == [(1, 17), (1, 17)]
    duplicate = [e for e in overtaken.events if isinstance(e, Segment) and e.connection == 2
                 and e.sender == "server" and e.flags == ("ACK",)][1]  # fmt: skip
    assert "tcp_send_dupack" in duplicate.explanation
    answer = next(e for e in overtaken.events if isinstance(e, Segment) and e.connection == 2
                  and e.sender == "server" and e.length)  # fmt: skip
    assert duplicate.id < answer.id


def test_only_without_a_delay() -> None:
    delayed = vm_captures.model(
        "handshake", "plain", {"client_fastopen": "connect"}, delay_ms=5, iterations=2
    )
    assert not [p for p in delayed.lock_points if p.kind == "overtaken"]


def test_without_the_point_the_capture_disagrees(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(World, "_overtaken", lambda *args: False)
    sentences = packets.compare(model(), vm_captures.load(NAME)[1], {}).sentences
    assert any("server: the kernel sent ACK seq 1 ack 17" in s for s in sentences), sentences


def test_only_where_data_follows_a_pure_ack() -> None:
    """A Fast Open client whose SYN carried the whole request sends nothing more as its
    sendto() returns, and one with more to send acks the SYN-ACK with that data
    (tcp_rcv_synsent_state_process: a write is waiting): no pure ACK can be overtaken
    in either. A plain connect() acks at once and its write follows."""
    for settings in ({}, {"request_bytes": "4000", "mtu": "1500"}):
        fastopen = vm_captures.model("fastopen", "cookie", settings, delay_ms=0)
        assert not [p for p in fastopen.lock_points if p.kind == "overtaken"], settings
    plain = vm_captures.model("fastopen", "plain", {}, delay_ms=0)
    assert [p.key[1:] for p in plain.lock_points if p.kind == "overtaken"] == [
        ("server", 1, "overtaken")
    ] * 3
