"""Segments sent at one instant may straddle a tick of the sender's timestamp clock, and
then tcp_add_backlog does not merge them (model/backlog.py, a "tick" lock point).

CI's VM (Debian's 6.1, netem, HZ 250, window scale 7): fastopen cookie at MTU 576
with a 2500-byte answer at D = 10 ms. The answer's five segments reached the client
while its connect(), woken by the SYN-ACK, held the socket; the client then acked
525, 1573 and 2501, each window the never-shrink bound of the one before (507, 499,
492): three backlog skbs, [1-525], [525-1573] and [1573-2501]. Had the five carried
one TSval they would have merged into one skb and drawn one ACK.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from tfolab.lab import packets
from tfolab.lab.catalog import find_lab
from tfolab.lab.plan import plan
from tfolab.model import Segment, Simulation, simulate
from tfolab.model.captured import CapturedRow
from tfolab.model.rcv_space import receive_memory_for
from tfolab.model.simulation import with_lock_early

CAPTURES = Path(__file__).parent / "captures"
RMEM = (4096, 131072, 6291456)
NAMES = [
    "fastopen-cookie-answer-2500-mtu576-d10-6.1-a",
    "fastopen-cookie-answer-2500-mtu576-d10-6.1-b",
]


def model() -> Simulation:
    settings = {"mtu": "576", "response_bytes": "2500"}
    (planned,) = plan(find_lab("fastopen"), "cookie", 3, settings, delay_ms=10).scenarios
    return simulate(
        planned.config,
        one_way_delay_ms=10,
        iterations=3,
        hz=250,
        receive_space_bytes=RMEM[2],
        receive_memory=receive_memory_for((6, 1), RMEM[1], RMEM[2]),
    )


def _rows(name: str) -> list[CapturedRow]:
    data = json.loads((CAPTURES / f"{name}.json").read_text())
    return msgspec.convert(data["captured"], list[CapturedRow])


@pytest.mark.parametrize("name", NAMES)
def test_every_capture_agrees_with_ticks_named_and_counted(name: str) -> None:
    comparison = packets.compare(model(), _rows(name), {})
    assert comparison.sentences == []
    assert any(key[3] == "tick" for key in comparison.simulation.lock_early)
    assert comparison.races_used >= 1


def _client_acks(sim: Simulation, connection: int) -> list[tuple[int | None, int]]:
    return [
        (e.ack, e.window)
        for e in sim.events
        if isinstance(e, Segment) and e.connection == connection and e.sender == "client"
        and not e.length and e.ack and e.ack > 1 and "FIN" not in e.flags
        and e.ack < 2502 and not e.race
    ]  # fmt: skip


def _hold_then(sim: Simulation, connection: int, *points: tuple[int, str]) -> Simulation:
    """connect() holds the socket as the answer arrives, with these points taken too."""
    chosen: set[tuple[int, str, int, str]] = set()
    for wanted in [(1, "take"), *points]:
        current = with_lock_early(sim, frozenset(chosen)) if chosen else sim
        (point,) = [
            p for p in current.lock_points
            if (p.connection, p.side, p.end, p.kind) == (connection, "client", *wanted)
        ]  # fmt: skip
        chosen.add(point.key)
    return with_lock_early(sim, frozenset(chosen))


def test_one_tsval_merges_the_backlog_into_one_skb_and_one_ack() -> None:
    assert _client_acks(_hold_then(model(), 3), 3) == [(2501, 492)]


def test_ticks_split_the_backlog_and_each_skb_draws_an_ack_at_the_bound() -> None:
    sim = _hold_then(model(), 3, (1049, "tick"), (2097, "tick"))
    assert _client_acks(sim, 3) == [(525, 507), (1573, 499), (2501, 492)]
