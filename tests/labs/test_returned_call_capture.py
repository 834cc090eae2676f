"""A Fast Open client's woken sendto() can return, and its read() copy the answer's first
segment, before the second arrives (a "returned" lock point, model/loop.py).

CI's VM (Debian's 6.1, netem, HZ 250, window scale 7): fastopen cookie at MTU 576 with
a 2500-byte answer at D = 10 ms, the third outcome of that command (the other two are
in test_backlog_split_capture.py). In the measured iteration 2 (the model's connection
3) the SYN-ACK came 0.65 ms before the answer. The client acked 525 (507), then 1049
at 505: only that segment charged, so read() had copied the first one; then 1573 at
501 and 2501 at 494 with no ACK of 2097: read() took the socket again, and its
release processed [1049-1573] as one backlog list and [1573-2501] as the next (a
split). Before, the model had the woken call return only after the whole answer, or
hold the socket through it; and the search for lock points, taking the first of equally
good outcomes, followed a take that explained the first window and missed the rest.
"""

from __future__ import annotations

import pytest

from tests.labs import vm_captures
from tfolab.lab import packets
from tfolab.model import AppCall, Segment, Simulation
from tfolab.model.loop import World
from tfolab.model.simulation import with_lock_early

NAME = "fastopen-cookie-answer-2500-mtu576-d10-6.1-returned"
OUTCOME = frozenset(
    {(3, "client", 525, "returned"), (3, "client", 1049, "take"), (3, "client", 2097, "split")}
)


def model() -> Simulation:
    return vm_captures.model(
        "fastopen", "cookie", {"mtu": "576", "response_bytes": "2500"}, delay_ms=10
    )


def client_acks(sim: Simulation, connection: int) -> list[tuple[int | None, int | None]]:
    return [
        (e.ack, e.window)
        for e in sim.events
        if isinstance(e, Segment) and e.connection == connection and e.sender == "client"
        and e.length == 0 and "SYN" not in e.flags and "FIN" not in e.flags
        and e.ack not in (1, 2502)
    ]  # fmt: skip


def test_the_capture_agrees_where_the_call_returned_first() -> None:
    comparison = packets.compare(model(), vm_captures.load(NAME)[1], {})
    assert comparison.sentences == []
    assert comparison.simulation.lock_early >= OUTCOME
    assert comparison.races_used >= len(OUTCOME)


def test_the_outcome_acks_each_list() -> None:
    sim = with_lock_early(model(), OUTCOME)
    assert client_acks(sim, 3) == [(525, 507), (1049, 505), (1573, 501), (2501, 494)]
    # sendto() returned and read() copied the first segment before the second arrived
    calls = [
        e for e in sim.events if isinstance(e, AppCall) and e.connection == 3 and e.side == "client"
    ]
    ack_1049 = next(
        e for e in sim.events if isinstance(e, Segment) and e.connection == 3 and e.ack == 1049
    )
    returned = next(e for e in calls if e.call == "sendto" and e.detail == "returns")
    first_read = next(e for e in calls if e.call == "read")
    assert returned.id < first_read.id < ack_1049.id
    assert first_read.detail.startswith("524 B")


def test_without_the_returned_point_the_capture_disagrees(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(World, "_returned", lambda *args: False)
    sentences = packets.compare(model(), vm_captures.load(NAME)[1], {}).sentences
    assert any("ack 1049" in s and "window 505" in s for s in sentences), sentences


def test_the_first_equal_outcome_misses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Of equally good outcomes the search must follow the one that agrees furthest into
    the capture: a take at 2097 explains the first wrong window as well as the
    returned call does, and only the returned call leads on to the rest."""
    monkeypatch.setattr(packets, "_agreeing_prefix", lambda aligned: 0)
    comparison = packets.compare(model(), vm_captures.load(NAME)[1], {})
    assert (3, "client", 525, "returned") not in comparison.simulation.lock_early
    assert any("ack 1049" in s and "window 505" in s for s in comparison.sentences)
