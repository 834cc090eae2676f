"""The pure ladder layout, on the real model's timelines."""

from __future__ import annotations

from tfolab.lab import session
from tfolab.lab.catalog import find_lab
from tfolab.model.events import Segment
from tfolab.view.ladder_layout import MAX_GAP_ROWS, choose_scale, fit_label, layout


def timeline(lab: str, scenario: str, delay_ms: float, iterations: int = 1):
    found = find_lab(lab)
    result = session.predict(found, session.plan(found, scenario, iterations), delay_ms, hz=250)
    return result.scenarios[0].simulation.events


def text_of(ladder) -> list[str]:
    return ["".join(char for char, _, _ in row) for row in ladder.rows]


def test_scale_puts_a_one_way_trip_on_about_five_rows() -> None:
    assert choose_scale(10) == 2
    assert choose_scale(5) == 1
    assert choose_scale(0) == 1
    assert 10 / choose_scale(100) <= 5 * 10


def test_every_segment_is_an_arrow_from_send_row_to_arrival_row() -> None:
    events = timeline("fastopen", "cookie-request", 10)
    ladder = layout(events, 70, 10)
    rows = text_of(ladder)
    for index, event in enumerate(events):
        first, last = ladder.event_rows[index]
        if isinstance(event, Segment):
            head = "▶" if event.sender == "client" else "◀"
            assert head in rows[last], (event.label(), rows[last])
            assert last > first  # to scale, or pushed down a little where events crowd
    assert any("SYN seq=0 TFO req" in row for row in rows)
    assert any("TFO cookie" in row for row in rows)


def test_the_delayed_ack_timer_is_a_visible_break() -> None:
    events = timeline("delack", "nagle", 10, iterations=2)
    ladder = layout(events, 70, 10)
    rows = text_of(ladder)
    assert ladder.breaks >= 1
    assert any("≈ 43.2 ms later" in row for row in rows)
    assert any("delack fired" in row for row in rows)
    assert "gaps over" in ladder.scale_text()
    assert ladder.height < 2 * (170 / 2)  # compressed, not 1 row per 2 ms throughout
    assert MAX_GAP_ROWS * 2 < 43.2


def test_markers_and_narrow_widths() -> None:
    events = timeline("handshake", "plain", 10)
    read = max(i for i, e in enumerate(events) if getattr(e, "call", "") == "read")
    ladder = layout(events, 56, 10, {read: "▲ measured 41.7 ms"})
    rows = text_of(ladder)
    assert any("▲ measured 41.7 ms" in row for row in rows)
    assert all(len(row) == ladder.geometry.width for row in rows)
    narrow = layout(events, 30, 10)
    assert all(len(row) == narrow.geometry.width for row in text_of(narrow))


def test_fit_label_drops_seq_before_cutting() -> None:
    assert fit_label("SYN,ACK seq=0 ack=1 TFO cookie", 30) == "SYN,ACK seq=0 ack=1 TFO cookie"
    assert fit_label("SYN,ACK seq=0 ack=1 TFO cookie", 26) == "SYN,ACK ack=1 TFO cookie"
    assert fit_label("SYN,ACK seq=0 ack=1 TFO cookie", 10) == "SYN,ACK a…"
