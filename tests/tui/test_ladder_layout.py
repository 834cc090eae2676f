"""The pure ladder layout, on the real model's timelines: scale, lanes, labels, nothing cut."""

from __future__ import annotations

import pytest

from tfolab.core.errors import UserError
from tfolab.lab.catalog import find_lab, load_labs
from tfolab.lab.plan import plan
from tfolab.lab.prediction import predict
from tfolab.model.events import Segment
from tfolab.view.captured import ladder_content
from tfolab.view.flight_fold import fold_flights
from tfolab.view.focus import headline_only, iteration_starts
from tfolab.view.ladder_labels import label_variants, option_variants, side_lines
from tfolab.view.ladder_layout import LOST_MARK, MAX_LANES, choose_scale, layout

# The ladder's width inside the UI: 120x36 with the side panel, 80x24 with it folded.
WIDTHS = (86, 77)


def result_of(lab: str, scenario: str, delay_ms: float, iterations: int | None = None):
    found = find_lab(lab)
    return predict(plan(found, scenario, iterations, delay_ms=delay_ms), hz=250)


def timeline(lab: str, scenario: str, delay_ms: float, iterations: int = 1):
    return result_of(lab, scenario, delay_ms, iterations).scenarios[0].simulation.events


def every_scenario() -> list[tuple[str, str]]:
    return [(lab.name, s.name) for lab in load_labs() for s in lab.scenarios]


def test_scale_puts_a_one_way_trip_on_about_five_rows() -> None:
    assert choose_scale(10) == 2
    assert choose_scale(5) == 1
    assert choose_scale(0) == 1
    assert 10 / choose_scale(100) <= 5 * 10


def short_flights(lab: str, scenario: str) -> bool:
    """Every burst of the scenario fits the layout's lanes drawn segment by segment."""
    folds = fold_flights(timeline(lab, scenario, 10, iterations=2))
    return max(folds.counts.values(), default=0) <= MAX_LANES


@pytest.mark.parametrize(
    ("lab", "scenario", "fold"),
    [(lab, name, True) for lab, name in every_scenario()]
    + [(lab, name, False) for lab, name in every_scenario() if short_flights(lab, name)],
)
@pytest.mark.parametrize("delay", [10, 0.25, 75, 300])
def test_the_scale_holds_for_every_arrow(lab: str, scenario: str, fold: bool, delay: float) -> None:
    """An arrow covers exactly its flight at the stated scale: nothing stretches it; in
    the default view (flights folded) for every scenario, and segment by segment where
    no burst has more segments than the layout has lanes (beyond, arrowheads must share
    rows: a 10-segment flight, the `f` key's view of a big answer). A scenario the
    model refuses at this delay (the transfer lab below 2 ms) has no ladder to draw."""
    try:
        events = timeline(lab, scenario, delay, iterations=2)
    except UserError as refused:
        assert "outside the model's domain" in str(refused) and delay < 2
        return
    ladder = layout(events, 86, delay, fold=fold)
    folds = fold_flights(events) if fold else None
    scale = ladder.scale_ms
    rows = ladder.text()
    for index, event in enumerate(events):
        if not isinstance(event, Segment):
            continue
        if folds is not None:
            if index in folds.hidden:  # drawn as its flight's arrow
                assert ladder.arrow_rows[index] == ladder.arrow_rows[folds.folded_into[index]]
                continue
            folded = folds.events[index]
            assert isinstance(folded, Segment)
            event = folded
        first, last = ladder.arrow_rows[index]
        if event.lost:  # the flight it began, at the same scale, cut off halfway at a cross
            assert last - first <= round(delay / scale) / 2 + 1, event.label()
            assert LOST_MARK in rows[last], (event.label(), rows[last])
            continue
        assert last - first == round((event.arrived_ms - event.sent_ms) / scale), event.label()
        head = "▶" if event.sender == "client" else "◀"
        x = ladder.geometry.server_x - 1 if head == "▶" else ladder.geometry.client_x + 1
        assert rows[last][x] == head, (event.label(), rows[last])
        assert ladder.rows[last][x][2] == index  # its own head, not another arrow's


def test_simultaneous_arrows_take_lanes_without_sharing_strokes() -> None:
    events = timeline("handshake", "plain", 10)
    ladder = layout(events, 86, 10)
    owners: dict[tuple[int, int], int] = {}
    for r, row in enumerate(ladder.rows):
        for x, (char, role, owner) in enumerate(row):
            if role in ("client", "server") and char in "─╭╮╰╯":
                owners[(r, x)] = owner
    # The server's ACK and its response leave together: two lanes, two visible arrows.
    both = [
        i
        for i, e in enumerate(events)
        if isinstance(e, Segment) and e.sender == "server" and e.iteration == 1 and e.sent_ms == 30
    ]
    assert len(both) == 2
    assert all(sum(1 for o in owners.values() if o == i) >= 10 for i in both)
    first_rows = {ladder.arrow_rows[i][0] for i in both}
    assert len(first_rows) == 2  # one lane each


@pytest.mark.parametrize(("lab", "scenario"), every_scenario())
@pytest.mark.parametrize("width", WIDTHS)
def test_nothing_is_cut(lab: str, scenario: str, width: int) -> None:
    """At 120x36 nothing is cut; at 80x24 no arrow's label (a side note may show its head)."""
    result = result_of(lab, scenario, 10)
    for content in (
        ladder_content(result, "model"),
        headline_only(ladder_content(result, "model"), result.scenarios[0]),
    ):
        ladder = layout(content.events, width, 10, content.markers)
        g = ladder.geometry
        rows = ladder.text()
        between = [row[g.client_x : g.server_x + 1] for row in rows]
        assert not [row for row in (rows if width == WIDTHS[0] else between) if "…" in row]
        assert all(len(row) == width for row in rows)


def test_labels_drop_fields_in_order() -> None:
    events = timeline("fastopen", "cookie", 10)
    syn = next(e for e in events if isinstance(e, Segment) and e.flags == ("SYN",) and e.length)
    assert label_variants(syn) == [
        "SYN seq=0 len=16 TFO cookie",
        "SYN len=16 TFO cookie",
        "SYN len=16",
    ]


def test_the_syn_options_are_readable_in_the_handshake() -> None:
    events = timeline("handshake", "plain", 10)
    syn = next(e for e in events if isinstance(e, Segment) and e.flags == ("SYN",))
    assert option_variants(syn) == ["mss 65495 sackOK TS wscale 10", "mss 65495 sack TS ws 10"]
    for width in WIDTHS:
        text = "\n".join(layout(events, width, 10).text())
        assert "mss 65495 sackOK TS wscale 10" in text or "mss 65495 sack TS ws 10" in text


def test_long_notes_wrap_or_show_their_head() -> None:
    note = "• enters pingpong (interactive) mode: it sent data within ato of receiving data"
    assert side_lines(note, 19, is_note=True) == ["• enters pingpong", "(interactive) mode"]
    assert side_lines("read() 16 B, first response byte", 19) == [
        "read() 16 B, first",
        "response byte",
    ]


def test_the_delayed_ack_timer_is_a_visible_break() -> None:
    events = timeline("delack", "nagle", 10, iterations=2)
    ladder = layout(events, 86, 10)
    rows = ladder.text()
    assert ladder.breaks >= 1
    assert any("≈ 43.2 ms later" in row for row in rows)
    assert any("delack fired" in row for row in rows)
    assert "gaps over" in ladder.scale_text()
    assert ladder.height < 170 / 2


def test_markers_and_narrow_widths() -> None:
    events = timeline("handshake", "plain", 10)
    read = max(i for i, e in enumerate(events) if getattr(e, "call", "") == "read")
    for width in WIDTHS:
        ladder = layout(events, width, 10, {read: "▲ measured 41.7 ms"})
        text = " ".join(row.strip("│ ") for row in ladder.text())
        assert "▲ measured 41.7" in text
    narrow = layout(events, 30, 10)
    assert all(len(row) == narrow.geometry.width for row in narrow.text())


def test_headline_only_hides_warm_up_close_down_and_side_notes() -> None:
    result = result_of("fastopen", "cookie", 10)
    scenario = result.scenarios[0]
    full = ladder_content(result, "model")
    focused = headline_only(full, scenario)
    assert 0 < len(focused.events) < len(full.events) / 2
    assert all(e.iteration >= 1 for e in focused.events)
    labels = [e.label() for e in focused.events if isinstance(e, Segment)]
    assert not any("FIN" in label for label in labels)
    assert "SYN seq=0 len=16 TFO cookie" in labels
    path_ids = {i for p in scenario.simulation.predictions for i in p.path}
    assert all(e.id in path_ids for e in focused.events if type(e).__name__ == "Note")
    assert set(iteration_starts(focused.events)) == {1, 2, 3}
    assert focused.path and max(focused.path) < len(focused.events)


def test_a_lost_segment_stops_halfway_at_a_cross() -> None:
    """The `drop` setting: the lost SYN's arrow leaves the client and stops at a cross
    halfway to the server, its label saying so; the SYN sent again crosses whole."""
    from tfolab.model.scenario import parse_settings
    from tfolab.model.simulation import simulate

    config = find_lab("handshake").scenario("plain").config
    config = config.with_typed(parse_settings({"drop": "client:1"}))
    sim = simulate(config, one_way_delay_ms=10, iterations=1, hz=250)
    drawn = layout(sim.events, WIDTHS[0], 10)
    text = ["".join(char for char, _, _ in row) for row in drawn.rows]
    crossed = [(r, line.index(LOST_MARK)) for r, line in enumerate(text) if LOST_MARK in line]
    assert len(crossed) == 1  # one lost segment, one cross
    row, x = crossed[0]
    client_x, server_x = drawn.geometry.client_x, drawn.geometry.server_x
    assert abs(x - (client_x + server_x) / 2) <= 2  # halfway across
    assert any("SYN seq=0 lost" in line for line in text[: row + 1])
    assert sum("▶" in line for line in text) >= 2  # the SYN again and the request arrive
