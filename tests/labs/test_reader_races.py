"""The comparison finds where the woken readers took their sockets (lab/packets.py).

The capture is a real one (Linux 6.18, D = 0 without a delayer, 32 MiB
tcp_rmem[2]): delack nodelay with a 36086-byte first write, one round. The
server's recv() ran between the client's two writes (ack 36087, then ack
36093) and the client's read() copied the first 32768 bytes of the echo
before its last 3324 arrived (window 117 on its last three segments). The
model's default order has neither; two lock points (model/backlog.py) give
both, and the comparison counts them as races used.
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.model.scenarios import scenario
from tfolab.lab import packets
from tfolab.lab.disagreements import Extra, WrongWindow
from tfolab.model import Simulation, simulate, simulation
from tfolab.model.captured import CapturedRow
from tfolab.model.loop import ReaderChoice
from tfolab.model.options import Mss, SackPermitted, Timestamps, WindowScale
from tfolab.model.rcv_space import ReceiveMemory

HOST_RMEM = ReceiveMemory(rmem_max=33_554_432, skb_head_truesize=832)  # as the runner measured
SYN = (Mss(65495), SackPermitted(), Timestamps(), WindowScale(10))  # both SYNs: lo's MTU
CAPTURED: list[
    tuple[float, str, tuple[str, ...], int, int | None, int, int]
] = [  # (arrival ms, sender, flags, seq, ack, length, window)
    (0.0137, "client", ("SYN",), 0, None, 0, 65495),
    (0.0199, "server", ("SYN", "ACK"), 0, 1, 0, 65483),
    (0.0264, "client", ("ACK",), 1, 1, 0, 64),
    (0.0524, "client", ("ACK",), 1, 1, 32741, 64),
    (0.056, "server", ("ACK",), 1, 32742, 0, 93),
    (0.0612, "client", ("ACK", "PSH"), 32742, 1, 3345, 64),
    (0.0686, "client", ("ACK", "PSH"), 36087, 1, 6, 64),
    (0.0885, "server", ("ACK",), 1, 36087, 0, 93),
    (0.1115, "server", ("ACK",), 1, 36093, 0, 93),
    (0.1462, "server", ("ACK",), 1, 36093, 32768, 93),
    (0.1501, "client", ("ACK",), 36093, 32769, 0, 93),
    (0.1546, "server", ("ACK", "PSH"), 32769, 36093, 3324, 93),
    (0.1594, "client", ("ACK",), 36093, 36093, 0, 117),
    (0.1694, "client", ("FIN", "ACK"), 36093, 36093, 0, 117),
    (0.1915, "server", ("FIN", "ACK"), 36093, 36094, 0, 93),
    (0.2012, "client", ("ACK",), 36094, 36094, 0, 117),
]


def _rows(changes: dict[int, int] | None = None) -> list[CapturedRow]:
    """The capture, with the window of row i replaced by changes[i]."""
    return [
        CapturedRow(
            t_ms,
            1,
            "client" if sender == "client" else "server",
            list(flags),
            seq,
            ack,
            length,
            [*SYN] if "SYN" in flags else [Timestamps()],
            (changes or {}).get(i, window),
        )
        for i, (t_ms, sender, flags, seq, ack, length, window) in enumerate(CAPTURED)
    ]


def _sim() -> Simulation:
    config = dataclasses.replace(scenario("delack", "nodelay").config, first_write_bytes=36086)
    return simulate(
        config,
        one_way_delay_ms=0,
        iterations=1,
        receive_space_bytes=HOST_RMEM.rmem_max,
        receive_memory=HOST_RMEM,
    )


def test_the_capture_agrees_once_the_readers_lock_points_are_found() -> None:
    comparison = packets.compare(_sim(), _rows(), {})
    assert comparison.disagreements == ()
    assert comparison.simulation.lock_early == {
        (1, "server", 36087, "take"),
        (1, "client", 32769, "take"),
    }
    named, used = comparison.races_named, comparison.races_used
    assert used >= 2 and named >= len(comparison.simulation.lock_points) >= 5


def test_without_the_search_the_default_order_disagrees(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packets, "LOCK_SEARCH", 0)
    kinds = {type(d) for d in packets.compare(_sim(), _rows(), {}).disagreements}
    assert kinds == {Extra, WrongWindow}  # the ack 36087, the client's 117


def test_no_lock_point_gives_a_window_the_kernel_cannot() -> None:
    """118 on the client's last ACK: no outcome of the race gives it, so it stays."""
    found = packets.compare(_sim(), _rows({15: 118}), {}).disagreements
    assert [type(d) for d in found] == [WrongWindow]


def test_the_search_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[frozenset[ReaderChoice]] = []
    original = simulation.with_lock_early

    def counted(sim: Simulation, choice: frozenset[ReaderChoice]) -> Simulation:
        runs.append(choice)
        return original(sim, choice)

    monkeypatch.setattr(packets, "with_lock_early", counted)
    monkeypatch.setattr(packets, "LOCK_SEARCH", packets.FEWEST_RESERVE + 3)
    packets.compare(_sim(), _rows({15: 118}), {})
    # the default order's search and the other order's, each within LOCK_SEARCH
    assert 0 < len(runs) <= 2 * packets.LOCK_SEARCH


def test_a_long_timeline_gets_fewer_simulations(monkeypatch: pytest.MonkeyPatch) -> None:
    """The search's cost grows with the timeline's events: five 1 MB answers (12,546
    events) took 140 s of search at 400 simulations, so a long timeline gets fewer, and a
    comparison the limit stopped with disagreements left says so (search_cut)."""
    runs: list[frozenset[ReaderChoice]] = []
    original = simulation.with_lock_early

    def counted(sim: Simulation, choice: frozenset[ReaderChoice]) -> Simulation:
        runs.append(choice)
        return original(sim, choice)

    sim = _sim()
    monkeypatch.setattr(packets, "with_lock_early", counted)
    monkeypatch.setattr(packets, "SEARCH_EVENTS", len(sim.events) * 4)  # as if 100x longer
    comparison = packets.compare(sim, _rows({15: 118}), {})
    size, reserve = packets._search_size(sim)
    assert (size, reserve) == (packets.SEARCH_MIN_SIMULATIONS, 2)
    assert 0 < len(runs) <= 2 * size
    assert comparison.search_cut == size
    assert [type(d) for d in comparison.disagreements] == [WrongWindow]


def test_the_search_size_follows_the_events() -> None:
    class Timeline:
        def __init__(self, events: int) -> None:
            self.events = [None] * events

    def size(events: int) -> tuple[int, int]:
        return packets._search_size(Timeline(events))  # type: ignore[arg-type]

    assert size(300) == (packets.LOCK_SEARCH, packets.FEWEST_RESERVE)
    assert size(12_546) == (15, 2)
    assert size(10**6) == (packets.SEARCH_MIN_SIMULATIONS, 2)


def test_an_agreeing_comparison_is_never_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packets, "SEARCH_EVENTS", 1)
    comparison = packets.compare(_sim(), _rows(), {})
    assert comparison.disagreements == () and comparison.search_cut == 0


def test_an_outcome_outside_the_domain_is_no_race(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock point whose outcome leaves the model's domain on its way (found in CI's VM:
    a sender left waiting on a closed window with nothing in flight, the persist timer)
    is not offered; the comparison goes on without it instead of crashing the run."""

    def outside(sim: Simulation, choice: frozenset[ReaderChoice]) -> Simulation:
        raise simulation.ModelInputError("outside the model's domain: the persist timer")

    monkeypatch.setattr(packets, "with_lock_early", outside)
    comparison = packets.compare(_sim(), _rows(), {})
    assert comparison.simulation.lock_early == frozenset()
    assert {type(d) for d in comparison.disagreements} == {Extra, WrongWindow}
