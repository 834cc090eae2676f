"""A flight of many segments is one arrow on the ladder, and every step still has its place."""

from __future__ import annotations

import dataclasses

from tfolab.model import ScenarioConfig, Segment, Simulation, simulate
from tfolab.view.flight_fold import FOLD_MIN, fold_flights, fold_label_variants
from tfolab.view.kernel_segment import KernelSegment
from tfolab.view.ladder_layout import layout
from tfolab.view.ladder_text import render_ladder


def big_answer(response_bytes: int = 7240) -> Simulation:
    config = ScenarioConfig(mtu=1500, response_bytes=response_bytes)
    return simulate(config, one_way_delay_ms=10, iterations=1, hz=250)


def test_the_answer_and_its_quick_acks_fold_into_one_arrow_each() -> None:
    sim = big_answer()
    folds = fold_flights(sim.events)
    assert len(folds.events) == len(sim.events)  # every index names the same step
    flights = {index: folds.events[index] for index in folds.counts}
    data = [(i, s) for i, s in flights.items() if isinstance(s, Segment) and s.length]
    acks = [(i, s) for i, s in flights.items() if isinstance(s, Segment) and not s.length]
    ((data_index, answer),) = data
    assert answer.sender == "server" and (answer.seq, answer.length) == (1, 7240)
    assert folds.counts[data_index] == 5 and "PSH" in answer.flags  # the last one's flags
    assert fold_label_variants(answer, 5)[1] == "5 segments, 7,240 bytes, seq 1-7241"
    ((ack_index, last_ack),) = acks
    assert last_ack.sender == "client" and last_ack.ack == 7241
    assert folds.counts[ack_index] == 5
    hidden = sorted(folds.hidden)
    assert len(hidden) == 8 and set(folds.folded_into.values()) == {data_index, ack_index}


def test_a_folded_away_segment_sits_on_its_flights_rows() -> None:
    sim = big_answer()
    drawn = layout(sim.events, 100, 10, fold=True)
    assert drawn.folded_into
    for member, flight in drawn.folded_into.items():
        assert drawn.event_rows[member] == drawn.event_rows[flight]
    assert "2 flights folded" in drawn.scale_text()
    unfolded = layout(sim.events, 100, 10)
    assert not unfolded.folded_into and "folded" not in unfolded.scale_text()
    assert unfolded.height > drawn.height  # ten arrows take more rows than one


def test_fewer_than_fold_min_segments_keep_their_own_arrows() -> None:
    sim = big_answer((FOLD_MIN - 1) * 1448)
    folds = fold_flights(sim.events)
    data = [folds.events[i] for i in folds.counts]
    assert not any(isinstance(s, Segment) and s.length for s in data)


def test_the_models_and_the_kernels_segments_fold_apart() -> None:
    """The "both" view interleaves them; each kind's flight folds on its own."""
    sim = big_answer()
    answer = [e for e in sim.events if isinstance(e, Segment) and e.sender == "server" and e.length]
    names = [f.name for f in dataclasses.fields(Segment)]
    both: list[Segment] = []
    for segment in answer:
        both.append(segment)
        both.append(KernelSegment(**{name: getattr(segment, name) for name in names}))
    folds = fold_flights(both)
    assert sorted(folds.counts.values()) == [5, 5]
    kinds = {type(folds.events[i]) for i in folds.counts}
    assert kinds == {Segment, KernelSegment}


def test_the_text_ladder_folds_and_its_steps_still_list_every_segment() -> None:
    sim = big_answer()
    folded = render_ladder(sim, fold=True)
    every = render_ladder(sim, fold=False)
    ladder_part = folded.split("Steps:")[0]
    assert "5 segments" in ladder_part or "5 segs" in ladder_part
    assert "len=1448" not in ladder_part and "len=1448" in every.split("Steps:")[0]
    assert folded.split("Steps:")[1] == every.split("Steps:")[1]
