"""accept() may hold a new socket with data queued already (an "accept" point,
model/loop.py): what arrives then is processed at its release_sock while the queued
data is still unread, so tcp_grow_window has that much less room.

This host (Linux 6.18.44, NFQUEUE delayer, window scale 10): CI's host fuzz case
(seed 2026), delack nagle with a 3857-byte first write at MTU 1143, D = 26.85 ms,
one connection; reproduced here once in 60 runs. The handshake's ACK woke accept();
the first two segments were queued and ACKed at once (windows 67 and 69) before
inet_accept's lock_sock, the last two waited in the backlog, merged, and
tcp_release_cb acked 3858 with window 69. Had the recv() after accept() held the
socket instead, it would have read the first two first, and the window grown to 70.
"""

from __future__ import annotations

from tests.labs import host_captures
from tfolab.lab import packets
from tfolab.lab.packet_rows import captured_rows, model_rows, model_starts
from tfolab.model import Segment, Simulation
from tfolab.model.simulation import with_lock_early

NAME = "delack-nagle-3857-mtu1143-d26.85-6.18-accept-holds"
TAKE = (1, "server", 2183, "take")
ACCEPT = (1, "server", 2183, "accept")


def scenario() -> Simulation:
    settings = {"first_write_bytes": "3857", "mtu": "1143"}
    return host_captures.model("delack", "nagle", settings, iterations=1, delay_ms=26.85)


def server_acks(sim: Simulation) -> list[tuple[int | None, int | None]]:
    return [
        (e.ack, e.window)
        for e in sim.events
        if isinstance(e, Segment) and e.sender == "server" and not e.length
        and e.ack is not None and 1 < e.ack < 3864
    ]  # fmt: skip


def test_the_point_is_offered_only_with_data_queued_before_accept_holds() -> None:
    base = scenario()
    took = with_lock_early(base, frozenset({TAKE}))
    assert ACCEPT in {p.key for p in took.lock_points}
    # the first segment finds nothing queued: accept() holds it there anyway
    first = with_lock_early(base, frozenset({(1, "server", 1, "take")}))
    assert not [p for p in first.lock_points if p.kind == "accept"]


def test_accept_holding_leaves_the_window_where_the_queued_data_holds_it() -> None:
    took = with_lock_early(scenario(), frozenset({TAKE}))
    held = with_lock_early(took, frozenset({TAKE, ACCEPT}))
    assert server_acks(held) == [(1092, 67), (2183, 69), (3858, 69)]
    assert server_acks(took) == [(1092, 67), (2183, 69), (3858, 70)]
    notes = [e.explanation for e in held.events if e.connection == 1]
    accepted = next(i for i, text in enumerate(notes) if text.startswith("accept(): "))
    assert "accept() holds the new socket" in notes[accepted + 1]
    # the recv() comes after accept() returns, once the backlog was processed
    read = next(i for i, text in enumerate(notes) if text.startswith("recv() of"))
    assert read > next(i for i, text in enumerate(notes) if "tcp_release_cb" in text)


def test_the_capture_agrees_through_the_accept_point() -> None:
    comparison = packets.compare(scenario(), host_captures.load(NAME)[1], {})
    assert comparison.sentences == []
    assert comparison.simulation.lock_early == frozenset({TAKE, ACCEPT})
    assert comparison.races_used == 2


def test_with_the_recv_holding_the_window_disagrees() -> None:
    rows = host_captures.load(NAME)[1]
    took = with_lock_early(scenario(), frozenset({TAKE}))
    aligned = packets.pairs(
        model_rows(took),
        captured_rows(rows),
        model_starts(took),
        {0: 0.0},
    )
    said = [p.disagreement.sentence() for p in aligned if p.disagreement]
    assert said and all("the model says 70" in s for s in said), said
