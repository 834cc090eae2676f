"""A blocking read() may end its copy loop just before the next segment arrives.

tcp_recvmsg_locked stops once it has copied something and finds no skb queued
and no sk_backlog.tail; tcp_cleanup_rbuf then runs for what it copied, and a
segment that arrived after that look waits for the call's release_sock,
processed with sk_backlog.len still charged (6.18; backlog.py, a "stopped"
point). Captured on this host (tests/labs/host_captures.py) at D = 0, MTU
60000, in 1 run of 2: connection 2's client read the response's first 30208
bytes and sent a window update ACK of 30209 offering 96; the last 9792 bytes
then waited, so its FIN offered 105, where a read that flushed the backlog
first would have sent one ACK of 40001.
"""

from __future__ import annotations

from tests.labs.host_captures import disagrees, load, model, unneeded
from tfolab.lab import packets
from tfolab.model import Segment, Simulation
from tfolab.model.simulation import with_lock_early

NAME = "fastopen-40000-invalid-cookie-mtu60000-d0-6.18-read-stopped"
SETTINGS = {"request_bytes": "40000", "mtu": "60000"}
MEASURED = 3  # the model's connection for the capture's connection 2


def scenario() -> Simulation:
    return model("fastopen", "invalid-cookie", SETTINGS, 2, 0)


def client_acks(sim: Simulation) -> list[tuple[tuple[str, ...], int | None, int | None]]:
    return [
        (e.flags, e.ack, e.window)
        for e in sim.events
        if isinstance(e, Segment) and e.connection == MEASURED and e.sender == "client"
        and not e.length and "SYN" not in e.flags
    ]  # fmt: skip


def test_a_read_that_stopped_first_acks_the_copy_then_offers_105() -> None:
    took = with_lock_early(scenario(), frozenset({(MEASURED, "client", 30209, "take")}))
    assert client_acks(took)[:2] == [(("ACK",), 40001, 105), (("FIN", "ACK"), 40001, 105)]
    assert (MEASURED, "client", 40001, "stopped") in {p.key for p in took.lock_points}
    stopped = with_lock_early(took, took.lock_early | {(MEASURED, "client", 40001, "stopped")})
    assert client_acks(stopped)[:2] == [(("ACK",), 30209, 96), (("FIN", "ACK"), 40001, 105)]


def test_the_capture_agrees_and_every_race_the_comparison_counts_is_needed() -> None:
    _, rows = load(NAME)
    comparison = packets.compare(scenario(), rows, {})
    assert comparison.sentences == []
    assert comparison.simulation.lock_early
    assert unneeded(comparison, rows) == []
    assert disagrees(scenario(), rows)  # the default timeline alone does not
