"""Where a sender's GSO packets end, as a capture shows it (model/packet_ends.py).

The capture: CI's emulated VM (6.1, netem), `tfolab run transfer --scenario long
--delay 10` (300 kB read whole, MTU 1500). Its third connection's last flight left as
packets of 2 + 2 + 7 segments (its ACKs arrived spread out, each releasing its own
quota) where the model sends 8 and 4: segment 163, the last of its sendmsg skb, went
alone, the sender's clone, which the client's skb_try_coalesce cannot grow. Segment
164 then started a skb of its own, and the client's windows stayed 5 units (one skb
head) below the model's own to the answer's end: 2 runs of 13 there, stop 47's CI.
"""

from __future__ import annotations

import json

import pytest

from tests.captured_from_model import as_captured
from tests.labs import vm_captures
from tests.labs.host_captures import CAPTURES
from tfolab.lab import packets
from tfolab.lab.disagreements import Arrival, WrongWindow
from tfolab.lab.packet_rows import captured_rows, model_rows, model_starts
from tfolab.lab.prediction import accuracy_for
from tfolab.model import Segment, Simulation
from tfolab.model.captured import CapturedRow
from tfolab.model.packet_ends import CapturedEnds
from tfolab.model.simulation import captured_packet_ends, with_measured_round_trip

NAME = "transfer-long-d10-6.1-acks-spread"
MSS = 1448


@pytest.fixture(scope="module")
def vm_run() -> tuple[Simulation, list[CapturedRow]]:
    """The model as the run made it (its measured round trip included), and the capture."""
    delay_ms, rows = vm_captures.load(NAME)
    excess = json.loads((CAPTURES / f"{NAME}.json").read_text())["round_trip_excess_ms"]
    sim = vm_captures.model(
        "transfer", "long", {}, delay_ms=delay_ms, iterations=3, accuracy=accuracy_for("netem")
    )
    return with_measured_round_trip(sim, excess), rows


def _about_tcp(sim: Simulation, rows: list[CapturedRow]) -> list[object]:
    starts = {i: t for i, t in model_starts(sim).items() if i}
    aligned = packets.pairs(
        model_rows(sim), captured_rows(rows), model_starts(sim), {0: 0.0, **starts}
    )
    return [
        p.disagreement
        for p in aligned
        if p.disagreement and not isinstance(p.disagreement, Arrival)
    ]


def _server_segment(sim: Simulation, connection: int, index: int) -> Segment:
    return next(
        e
        for e in sim.events
        if isinstance(e, Segment)
        and e.connection == connection
        and e.sender == "server"
        and e.length
        and e.seq == 1 + index * MSS
    )


def test_the_models_own_packet_ends_leave_the_client_a_head_short(
    vm_run: tuple[Simulation, list[CapturedRow]],
) -> None:
    sim, rows = vm_run
    wrong = _about_tcp(sim, rows)
    assert wrong and all(isinstance(d, WrongWindow) for d in wrong)
    first = wrong[0]
    assert isinstance(first, WrongWindow)
    assert (first.kernel.connection, first.kernel.ack) == (3, 238921)
    assert (first.window, first.allowed) == (1351, (1356,))


def test_the_captured_packet_ends_make_segment_163_a_clone_and_the_windows_agree(
    vm_run: tuple[Simulation, list[CapturedRow]],
) -> None:
    sim, rows = vm_run
    ended = captured_packet_ends(sim, rows)
    assert ended is not None and ended.packet_ends_moved > 0
    assert _about_tcp(ended, rows) == []
    alone = _server_segment(ended, 3, 163)
    assert "PSH" not in alone.flags  # a packet of one segment: no PSH forced
    end = _server_segment(ended, 3, 162)  # the end of 156-162, short of its size limit
    assert "PSH" in end.flags and "the capture shows it ending here" in end.explanation
    assert "PSH" in _server_segment(sim, 3, 163).flags  # the model's own: the end of 160-163


def test_the_comparison_takes_that_outcome_and_counts_every_end_it_moved(
    vm_run: tuple[Simulation, list[CapturedRow]],
) -> None:
    sim, rows = vm_run
    starts = {i: t for i, t in model_starts(sim).items() if i}
    comparison = packets.compare(sim, rows, starts)
    assert all(isinstance(d, Arrival) for d in comparison.disagreements)
    assert comparison.simulation.packet_ends_moved > 0
    assert comparison.races_used >= comparison.simulation.packet_ends_moved


def test_a_capture_that_ends_them_where_the_model_does_moves_nothing() -> None:
    sim = vm_captures.model(
        "transfer", "long", {}, delay_ms=10, iterations=3, accuracy=accuracy_for("netem")
    )
    own = as_captured(model_rows(sim))
    assert captured_packet_ends(sim, own) is None


def _row(seq: int, length: int, flags: list[str], lost: bool = False) -> CapturedRow:
    return CapturedRow(0.0, 1, "server", flags, seq, 1, length, [], 0, lost)


def test_psh_ends_a_packet_none_ends_a_longer_one_and_a_lone_segment_is_unknown() -> None:
    ends = CapturedEnds.of(
        [
            _row(1, MSS, ["ACK"]),
            _row(1 + MSS, MSS, ["ACK", "PSH"]),
            _row(1 + 2 * MSS, MSS, ["ACK"], lost=True),  # the path, not the sender
            _row(1 + 3 * MSS, 0, ["ACK"]),  # no data: no packet of the answer
        ]
    )
    assert ends.ends_packet((1, "server", 1 + 2 * MSS), 2) is True
    assert ends.ends_packet((1, "server", 1 + MSS), 2) is False
    assert ends.ends_packet((1, "server", 1 + MSS), 1) is None  # one segment shows no PSH
    assert ends.ends_packet((1, "server", 1 + 3 * MSS), 2) is None
    assert ends.ends_packet((2, "server", 1 + MSS), 2) is None  # not in the capture
