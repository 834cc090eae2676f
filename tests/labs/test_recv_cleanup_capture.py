"""A segment may reach the echo server's MSG_DONTWAIT recv() while it copies: it waits in
the backlog, charged to sk_backlog.len, and if the copy outlasts it, the recv()'s
tcp_cleanup_rbuf (which with timeo 0 runs before release_sock) offers a window that much
smaller (a recv()'s "cleanup" point, model/backlog.py; the blocking read()'s own is
test_read_cleanup_capture.py).

CI's VM (Debian's 6.1, HZ 250, window scale 7), the VM fuzzer's seed 5406 case: delack
nodelay with TCP_CORK at MTU 5968, D = 0, a 26392-byte second write, two rounds on one
connection. In round 2 the server's recv() took the socket as the second of the write's
segments arrived, copied 11832 bytes, and ACKed 38235 with window 461 only after the
third and fourth had joined the backlog (merged into one skb: 13112 bytes charged);
the model's recv() that runs its tcp_cleanup_rbuf at once offers 466. The rows are the
ones the fuzzer printed.
"""

from __future__ import annotations

from tests.labs import vm_captures
from tfolab.lab import packets
from tfolab.lab.prediction import accuracy_for
from tfolab.model import Segment, Simulation
from tfolab.model.simulation import with_lock_early

NAME = "delack-nodelay-cork-mtu5968-d0-6.1-recv-cleanup"
SETTINGS = {"cork": "true", "mtu": "5968", "replay_syn": "false", "second_write_bytes": "26392"}
TAKE = (1, "server", 38235, "take")
AFTER_THIRD = (1, "server", 44151, "cleanup")
AFTER_FOURTH = (1, "server", 50067, "cleanup")


def scenario() -> Simulation:
    return vm_captures.model(
        "delack",
        "nodelay",
        SETTINGS,
        delay_ms=0,
        iterations=2,
        accuracy=accuracy_for("netem"),
    )


def read_ack(sim: Simulation) -> tuple[int | None, int | None]:
    """The server's ACK at its round-2 read that acknowledges part of the write."""
    return next(
        (e.ack, e.window)
        for e in sim.events
        if isinstance(e, Segment) and e.iteration == 2 and e.sender == "server"
        and not e.length and e.ack is not None and 26403 < e.ack < 52805
    )  # fmt: skip


def test_each_segment_arriving_during_the_copy_names_a_cleanup_point() -> None:
    took = with_lock_early(scenario(), frozenset({TAKE}))
    assert read_ack(took) == (38235, 466)  # tcp_cleanup_rbuf at once: nothing charged
    assert {AFTER_THIRD, AFTER_FOURTH} <= {p.key for p in took.lock_points}


def test_the_window_counts_what_joined_the_backlog_before_tcp_cleanup_rbuf() -> None:
    """After the third: its skb's truesize charged, 7196 bytes, and the window is still
    466 (the rounding up to 128); after the fourth, merged into it (its payload charged),
    13112 bytes: 461, the kernel's."""
    after_third = with_lock_early(scenario(), frozenset({TAKE, AFTER_THIRD}))
    after_fourth = with_lock_early(scenario(), frozenset({TAKE, AFTER_FOURTH}))
    assert read_ack(after_third) == (38235, 466)
    assert read_ack(after_fourth) == (38235, 461)
    note = next(
        e.text
        for e in after_fourth.events
        if getattr(e, "text", "").startswith("the server's recv() ends its copy")
    )
    assert "11832 B only now: 11832 B joined the backlog" in note and "13112 B" in note


def test_the_capture_agrees_through_the_take_and_its_cleanup_point() -> None:
    comparison = packets.compare(scenario(), vm_captures.load(NAME)[1], {})
    assert comparison.sentences == []
    assert {TAKE, AFTER_FOURTH} <= comparison.simulation.lock_early
