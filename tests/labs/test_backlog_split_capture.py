"""A release that has taken its backlog's list processes what arrives meanwhile as a
new list (model/backlog.py, a "split" lock point).

CI's VM (Debian's 6.1, netem, HZ 250, window scale 7): fastopen cookie at MTU 576
with a 2500-byte answer at D = 10 ms. The answer, one GSO packet (consecutive IP ids,
one TSval in the pcap), reached the client over 0.3 ms while the release_sock of its
woken connect() ran; the client acked 525, 1573 and 2501, each window the
never-shrink bound of the one before (507, 499, 492): __release_sock took [1-525],
and while it processed that, [525-1573] and then [1573-2501] formed new lists.
Merged into one list the five segments draw one ACK (2501). Two captures (a: connection
3, b: connection 2). And CI's own VM fuzz case (seed 2026, delack nagle at MTU 1143,
D = 26.85 ms): the echo's first segment came 1.1 ms before the other three; the
reader it woke held the socket as they arrived, and its release processed [2183] and
[3274-3864] as two lists (ACKs 2183 at 495 and 3864 at 482, both bounds).
"""

from __future__ import annotations

import pytest

from tests.labs import vm_captures
from tfolab.lab import packets
from tfolab.model import Segment, Simulation, backlog
from tfolab.model.captured import CapturedRow
from tfolab.model.simulation import with_lock_early

NAMES = [
    "fastopen-cookie-answer-2500-mtu576-d10-6.1-a",
    "fastopen-cookie-answer-2500-mtu576-d10-6.1-b",
]


def model() -> Simulation:
    return vm_captures.model(
        "fastopen", "cookie", {"mtu": "576", "response_bytes": "2500"}, delay_ms=10
    )


def _rows(name: str) -> list[CapturedRow]:
    return vm_captures.load(name)[1]


@pytest.mark.parametrize("name", NAMES)
def test_every_capture_agrees_with_splits_named_and_counted(name: str) -> None:
    comparison = packets.compare(model(), _rows(name), {})
    assert comparison.sentences == []
    assert any(key[3] == "split" for key in comparison.simulation.lock_early)
    assert comparison.races_used >= 1


@pytest.mark.parametrize("name", NAMES)
def test_without_split_points_the_captures_disagree(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ACK of 1573 at the bound (499) needs the split; the model's lists merged
    say 501."""
    monkeypatch.setattr(backlog, "mergeable", lambda sock, wire: False)
    said = packets.compare(model(), _rows(name), {}).sentences
    assert len(said) == 1 and "ack 1573" in said[0] and "window 499" in said[0], said


NAGLE = "delack-nagle-3857-mtu1143-d26.85-6.1"


def test_the_ci_fuzz_case_agrees_with_a_split_and_not_without(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    delay_ms, rows = vm_captures.load(NAGLE)
    settings = {"first_write_bytes": "3857", "mtu": "1143"}

    def model_of_it() -> Simulation:
        return vm_captures.model("delack", "nagle", settings, delay_ms=delay_ms, iterations=1)

    comparison = packets.compare(model_of_it(), rows, {})
    assert comparison.sentences == []
    assert any(key[3] == "split" for key in comparison.simulation.lock_early)
    monkeypatch.setattr(backlog, "mergeable", lambda sock, wire: False)
    assert packets.compare(model_of_it(), rows, {}).sentences != []


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


def test_two_splits_make_three_lists_and_each_draws_an_ack_at_the_bound() -> None:
    sim = _hold_then(model(), 3, (1049, "split"), (2097, "split"))
    assert _client_acks(sim, 3) == [(525, 507), (1573, 499), (2501, 492)]
