"""A refused SYN's data is resent as a GSO skb of the MSS now in use.

tcp_send_syn_data sizes the SYN's data before the peer's window is known (a
32 KiB page frag on 6.18), and after the SYN-ACK tcp_sync_mss bounds the MSS
to half the peer's window. When the SYN-ACK refuses the data (an invalid
cookie), tcp_rcv_fastopen_synack resends that skb, which __tcp_retransmit_skb
makes a GSO skb of the MSS. The captures are real ones from this host (Linux
6.18.44, no delay, tcp_rmem 4096 131072 33554432; the runner measured the skb
head at 832 bytes):

- at lo's MTU the 32768 bytes cross whole with gso_size 32741; the server's
  tcp_measure_rcv_mss takes 32741, so tcp_incr_quickack grants one quick ACK
  (65483 / (2 x 32741)), not two: the request's last 14472 bytes are ACKed by
  the server's read, window 93, not at once with 79 (fuzzer seed 5117);
- at MTU 60000 lo has no GSO, so the device cuts it: 29974 + 2794 bytes, PSH
  on the last piece only (tcp_gso_segment).
"""

from __future__ import annotations

import pytest

from tests.labs.host_captures import load, model
from tfolab.lab import packets
from tfolab.model import Segment, Simulation
from tfolab.model.events import Note

CASES = {
    "fastopen-47240-invalid-cookie-d0-6.18": ({"request_bytes": "47240"}, 1),
    "fastopen-40000-invalid-cookie-mtu60000-d0-6.18": (
        {"request_bytes": "40000", "mtu": "60000"},
        2,
    ),
}


def invalid_cookie(settings: dict[str, str], iterations: int) -> Simulation:
    return model("fastopen", "invalid-cookie", settings, iterations, 0)


def resent(sim: Simulation, connection: int) -> list[tuple[tuple[str, ...], int, int]]:
    """The client's data segments before the request's rest: (flags, seq, length)."""
    return [
        (e.flags, e.seq, e.length)
        for e in sim.events
        if isinstance(e, Segment) and e.connection == connection and e.sender == "client"
        and e.length and "SYN" not in e.flags
    ]  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_capture_agrees(name: str) -> None:
    settings, iterations = CASES[name]
    _, rows = load(name)
    assert packets.compare(invalid_cookie(settings, iterations), rows, {}).sentences == []


def test_at_lo_mtu_the_resend_crosses_whole_and_the_server_grants_one_quick_ack() -> None:
    sim = invalid_cookie({"request_bytes": "47240"}, 1)
    measured = 2  # connection 1 is the warm-up that learns the cookie
    assert resent(sim, measured) == [(("ACK", "PSH"), 1, 32768), (("ACK", "PSH"), 32769, 14472)]
    notes = [e.text for e in sim.events if isinstance(e, Note) and e.connection == measured]
    assert "server: first data: quick-ACK mode (1 quick ACKs, ato 40 ms)" in notes
    server_acks = [
        (e.ack, e.window)
        for e in sim.events
        if isinstance(e, Segment) and e.connection == measured and e.sender == "server"
        and not e.length and "SYN" not in e.flags and "FIN" not in e.flags
    ]  # fmt: skip
    assert server_acks == [(32769, 93), (47241, 93)]


def test_without_gso_the_device_cuts_it_psh_on_the_last_piece() -> None:
    """Connection 2: the first asked for the cookie, the key changed before this one."""
    sim = invalid_cookie({"request_bytes": "40000", "mtu": "60000"}, 2)
    assert resent(sim, 2)[:2] == [(("ACK",), 1, 29974), (("ACK", "PSH"), 29975, 2794)]
