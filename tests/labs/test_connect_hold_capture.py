"""A Fast Open client woken by the SYN-ACK holds its socket as the server's answer arrives.

The capture is a real one from this host (Linux 6.18.44, NFQUEUE delayer,
tcp_rmem 4096 131072 33554432, so window scale 10; the runner measured a
received segment's skb head at 832 bytes): fastopen cookie with a 7658-byte
request at D = 9.62 ms, 4 connections. The server's response leaves some
45 us after its SYN-ACK and the delayer keeps the gap. In connection 4 the
client's sendto(MSG_FASTOPEN), woken by the SYN-ACK in inet_wait_for_connect,
held the socket (lock_sock until tcp_sendmsg's release_sock) as the response
arrived: processed from the backlog with sk_backlog.len still charged,
tcp_grow_window stopped one truesize lower and the client offered 101
(x 1024) from then on, where reading after the burst gives 108. CI's fuzzer
(seed 2026) found it.
"""

from __future__ import annotations

import pytest

from tests.labs.host_captures import load, model
from tfolab.lab import packets
from tfolab.lab.disagreements import WrongWindow
from tfolab.model import Segment, Simulation
from tfolab.model.loop import Connection, World
from tfolab.model.simulation import with_lock_early

NAME = "fastopen-7658-d9.62-6.18-connect-holds"


def cookie(delay_ms: float) -> Simulation:
    return model("fastopen", "cookie", {"request_bytes": "7658"}, 4, delay_ms)


def client_windows(sim: Simulation, connection: int) -> list[int | None]:
    return [
        e.window
        for e in sim.events
        if isinstance(e, Segment) and e.connection == connection and e.sender == "client"
        and "SYN" not in e.flags
    ]  # fmt: skip


def test_the_capture_agrees_through_the_connect_hold() -> None:
    delay_ms, rows = load(NAME)
    comparison = packets.compare(cookie(delay_ms), rows, {})
    assert comparison.sentences == []
    # connection 5 is iteration 4 (connection 1 is the warm-up that learns the cookie)
    assert comparison.simulation.lock_early == frozenset({(5, "client", 1, "take")})


def test_each_measured_connection_names_the_hold_at_its_syn_ack() -> None:
    """And the other way the woken call can go: it returned before the answer came."""
    points = [p.key for p in cookie(9.62).lock_points]
    assert points == [(n, "client", 1, k) for n in (2, 3, 4, 5) for k in ("take", "returned")]


def test_the_hold_gives_101_where_reading_after_the_burst_gives_108() -> None:
    sim = cookie(9.62)
    assert client_windows(sim, 5) == [64, 108, 108, 108]
    held = with_lock_early(sim, frozenset({(5, "client", 1, "take")}))
    assert client_windows(held, 5) == [64, 101, 101, 101]
    notes = [e.text for e in held.events if getattr(e, "connection", None) == 5
             and "inet_wait_for_connect" in getattr(e, "text", "")]  # fmt: skip
    assert len(notes) == 1


def test_the_old_rule_misses_the_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a connecting client never held its socket at the SYN-ACK."""
    takes = World._takes

    def old(self: World, now: int, conn: Connection, side: str, *args, **kwargs) -> bool:  # type: ignore[no-untyped-def]
        if side == "client" and kwargs.get("handshake"):
            return False
        return takes(self, now, conn, side, *args, **kwargs)

    monkeypatch.setattr(World, "_takes", old)
    delay_ms, rows = load(NAME)
    found = packets.compare(cookie(delay_ms), rows, {}).disagreements
    assert found and all(isinstance(d, WrongWindow) for d in found)
