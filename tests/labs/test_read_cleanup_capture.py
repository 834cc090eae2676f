"""A segment may reach a blocking read() between the end of its copy loop and its
tcp_cleanup_rbuf: it waits in the backlog, charged to sk_backlog.len, and the read's
ACK offers a window that much smaller (a "cleanup" point, model/backlog.py; the
"stopped" point is the same loop ending with tcp_cleanup_rbuf run before it came).

CI's VM (Debian's 6.1, HZ 250, window scale 7), the VM fuzzer's seed 5272 case:
fastopen large-data at MTU 602, D = 0, one measured connection. The server's echo left
as 5 x 550 bytes, then 250; the client acked 2751 with window 507 before release_sock
took the last 250 bytes, and its FIN acked 3001 with window 508. The rows are the ones
the fuzzer printed.
"""

from __future__ import annotations

from tests.labs import vm_captures
from tfolab.lab import packets
from tfolab.model import Segment, Simulation
from tfolab.model.simulation import with_lock_early

NAME = "fastopen-large-data-mtu602-d0-6.1-read-cleanup"
MEASURED = 2  # the model's connection for the capture's connection 1
TAKE = (MEASURED, "client", 2751, "take")
CLEANUP = (MEASURED, "client", 3001, "cleanup")
STOPPED = (MEASURED, "client", 3001, "stopped")


def scenario() -> Simulation:
    return vm_captures.model("fastopen", "large-data", {"mtu": "602"}, delay_ms=0, iterations=1)


def client_acks(sim: Simulation) -> list[tuple[tuple[str, ...], int | None, int | None]]:
    return [
        (e.flags, e.ack, e.window)
        for e in sim.events
        if isinstance(e, Segment) and e.connection == MEASURED and e.sender == "client"
        and not e.length and e.ack is not None and e.ack > 1
    ]  # fmt: skip


def test_the_read_acks_what_it_copied_with_the_waiting_segment_charged() -> None:
    took = with_lock_early(scenario(), frozenset({TAKE}))
    offered = {p.key for p in took.lock_points}
    assert {CLEANUP, STOPPED} <= offered
    cleanup = with_lock_early(took, frozenset({TAKE, CLEANUP}))
    assert client_acks(cleanup)[:2] == [(("ACK",), 2751, 507), (("FIN", "ACK"), 3001, 508)]
    explained = " ".join(e.explanation for e in cleanup.events if e.connection == MEASURED)
    assert "between that look and tcp_cleanup_rbuf" in explained
    # the same loop ending with tcp_cleanup_rbuf run first offers the whole window
    stopped = with_lock_early(took, frozenset({TAKE, STOPPED}))
    assert client_acks(stopped)[:2] == [(("ACK",), 2751, 508), (("FIN", "ACK"), 3001, 508)]


def test_the_capture_agrees_through_the_cleanup_point_alone() -> None:
    comparison = packets.compare(scenario(), vm_captures.load(NAME)[1], {})
    assert comparison.sentences == []
    assert comparison.simulation.lock_early == frozenset({TAKE, CLEANUP})
    # the two points, and the server's immediate ACK of 2173 the kernel did not send
    # (at D = 0 a race with its application, model/delack_timer.py)
    assert comparison.races_used == 3


def test_the_window_field_tells_the_two_endings_apart() -> None:
    rows = vm_captures.load(NAME)[1]
    stopped = with_lock_early(scenario(), frozenset({TAKE, STOPPED}))
    aligned = packets.pairs(
        packets.model_rows(stopped),
        packets.captured_rows(rows),
        packets.model_starts(stopped),
        {0: 0.0},
        same_instant=True,
    )
    sentences = [p.disagreement.sentence() for p in aligned if p.disagreement]
    assert sentences == [
        "connection 1, client: ACK seq 3001 ack 2751 len 0 <TS> advertised window 507 "
        "at 3.70 ms; the model says 508"
    ]
