"""The kernel's own ladder in the UI: captured, model and both views, disagreements, pcap.

No real run: a LabResult comes from session.predict, and its "capture" is the
model's own segments turned into CapturedRow (as tests/labs/test_packet_diff.py
does), on a clock that starts at the scenario's first measured call; then it
is changed one way at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import dpkt
import msgspec
import pytest
from textual.widgets import Static

from tests.captured_from_model import as_captured
from tests.tui.conftest import HZ, SIZE
from tfolab.lab import packet_rows, pcap
from tfolab.lab.catalog import find_lab, load_labs
from tfolab.lab.plan import plan
from tfolab.lab.prediction import predict
from tfolab.lab.results import LabResult
from tfolab.model.captured import CapturedRow
from tfolab.model.events import Segment
from tfolab.model.options import Timestamps
from tfolab.tui.screens.lab import LabScreen
from tfolab.tui.widgets.ladder import LadderView
from tfolab.tui.widgets.step_panel import StepPanel
from tfolab.view.captured import compare, ladder_content, pcap_file_name
from tfolab.view.kernel_segment import KernelSegment

REALTIME_NS = 1_700_000_000 * 10**9  # a pcap's frames are stamped on the real clock
Mutate = Callable[[list[CapturedRow]], list[CapturedRow]]


def measured(
    lab: str,
    scenario: str,
    *,
    delay_ms: float = 10.0,
    iterations: int | None = None,
    mutate: Mutate | None = None,
    shift_ms: float = 0.0,
) -> LabResult:
    """A 'run' whose kernel did exactly what the model says (then `mutate`d)."""
    found = find_lab(lab)
    result = predict(plan(found, scenario, iterations, delay_ms=delay_ms), hz=HZ)
    result.measured, result.kernel_release, result.setup_ms = True, "6.1.0", 80.0
    target = result.scenarios[0]
    sim = target.simulation
    starts = packet_rows.model_starts(sim)
    origin = starts[0] - shift_ms  # the capture's clock: from the first measured call
    rows = as_captured((r for r in packet_rows.model_rows(sim) if not r.optional), origin_ms=origin)
    target.captured = mutate(rows) if mutate else rows
    for m in target.measurements:
        m.measured_ms = m.predicted_ms
        m.start_ms = starts[m.i] - origin
    chosen = {s.connection for s in sim.events if isinstance(s, Segment) and s.iteration >= 1}
    target.frames = [
        (REALTIME_NS + round(s.arrived_ms * 1e6), pcap.model_frame(s))
        for s in sim.events
        if isinstance(s, Segment) and s.connection in chosen
    ]
    target.compare_packets()
    return result


def extra_ack(rows: list[CapturedRow]) -> list[CapturedRow]:
    """The kernel sent one pure ACK the model does not have."""
    extra = msgspec.structs.replace(rows[3], flags=["ACK"], length=0, options=[Timestamps()])
    return [*rows[:4], extra, *rows[4:]]


def ladder_text(screen: LabScreen) -> str:
    layout = screen.query_one(LadderView).ladder_layout
    assert layout is not None
    return "\n".join("".join(char for char, _, _ in row) for row in layout.rows)


def banner(screen: LabScreen) -> str:
    return str(screen.query_one("#banner", Static).render())


# ------------------------------------------------------------------ pure: the view


@pytest.mark.parametrize(
    ("lab", "scenario"),
    [(lab.name, s.name) for lab in load_labs() for s in lab.scenarios],
)
def test_the_views_matching_says_what_packet_diff_says(lab: str, scenario: str) -> None:
    for mutate in (None, extra_ack, lambda rows: rows[:2] + rows[3:]):
        result = measured(lab, scenario, iterations=2, mutate=mutate)
        target = result.scenarios[0]
        comparison = compare(target, result.delay_ms)
        assert list(comparison.sentences) == target.packet_diff
        assert len(comparison.segments) == len(target.captured or ())


def test_captured_arrows_sit_where_they_were_measured() -> None:
    """On another clock (shifted), and one segment 0.6 ms late: drawn on the model's clock."""
    late = 0.6

    def later(rows: list[CapturedRow]) -> list[CapturedRow]:
        return [*rows[:-1], msgspec.structs.replace(rows[-1], t_ms=rows[-1].t_ms + late)]

    result = measured("fastopen", "cookie", iterations=2, mutate=later, shift_ms=7.0)
    target = result.scenarios[0]
    assert target.packet_diff == []  # inside the band
    model = [r for r in packet_rows.model_rows(target.simulation) if not r.optional]
    comparison = compare(target, result.delay_ms)
    arrived = [s.arrived_ms for s in comparison.segments]
    assert arrived[:-1] == pytest.approx([r.arrived_ms for r in model][:-1])
    assert arrived[-1] == pytest.approx(model[-1].arrived_ms + late)
    for segment in comparison.segments:
        assert segment.sent_ms == pytest.approx(segment.arrived_ms - result.delay_ms)
    assert [s.iteration for s in comparison.segments] == [r.iteration for r in model]


def test_both_merges_in_time_order_with_the_captured_role() -> None:
    result = measured("handshake", "plain")
    content = ladder_content(result, "both")
    model = result.scenarios[0].simulation.events
    assert len(content.events) == len(model) + len(result.scenarios[0].captured or ())
    times = [e.time_ms for e in content.events]
    assert times == sorted(times)
    assert set(content.roles) == set(content.captured)
    assert set(content.roles.values()) == {"captured"}
    assert all(isinstance(content.events[i], KernelSegment) for i in content.captured)
    assert content.sentences == {}


def test_pcap_file_name() -> None:
    when = datetime(2024, 3, 9, 14, 5, 7)
    assert (
        pcap_file_name("fastopen", "cookie", when) == "tfolab-fastopen-cookie-20240309-140507.pcap"
    )


# ------------------------------------------------------------------ the UI


async def test_c_cycles_model_captured_both(make_app) -> None:
    app = make_app(open_lab="fastopen", open_scenario="cookie-request")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        ladder = screen.query_one(LadderView)
        assert ladder.border_title == "Ladder"  # before a run: the model's, as ever
        screen.result = measured("fastopen", "cookie-request")
        await pilot.pause()
        assert ladder.border_title == "Ladder · model"
        model_text = ladder_text(screen)
        assert "sendto()" in model_text and "✓ kernel" not in model_text

        await pilot.press("c")
        assert screen.ladder_view == "captured"
        assert "captured" in str(ladder.border_title)
        captured = screen.result.scenarios[0].captured
        assert captured is not None and len(screen.events) == len(captured)
        text = ladder_text(screen)
        assert "SYN seq=0 TFO req" in text and "SYN,ACK ack=1 TFO cookie" in text
        assert "sendto()" not in text  # the capture has no application calls

        await pilot.press("c")
        assert screen.ladder_view == "both"
        assert ladder.border_title == "Ladder · model + captured"
        text = ladder_text(screen)
        assert "sendto()" in text and "✓ kernel" in text and "SYN seq=0 TFO req" in text

        await pilot.press("c")
        assert screen.ladder_view == "model"
        assert ladder_text(screen) == model_text


async def test_stepping_walks_the_captured_segments(make_app) -> None:
    app = make_app(open_lab="fastopen", open_scenario="cookie-request")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        screen.result = measured("fastopen", "cookie-request")
        await pilot.pause()
        await pilot.press("c", "home")
        captured = sorted(screen.result.scenarios[0].captured or (), key=lambda c: c.t_ms)
        panel = screen.query_one(StepPanel)
        first = panel.text.plain
        assert first.startswith(f"Step 1 of {len(captured)}")
        assert "captured · arrives" in first and "client → server" in first
        assert "SYN seq 0 len 0 <mss " in first and "TFO cookie request>" in first
        assert "connection 1" in first and "✓ as the model predicted" in first
        await pilot.press("n", "n")
        assert screen.step == 2 and screen.query_one(LadderView).step == 2
        third = panel.text.plain
        assert third.startswith(f"Step 3 of {len(captured)}")
        assert f"arrived on lo {captured[2].t_ms:.2f} ms after" in third
        assert f"arrives {screen.events[2].arrived_ms:.1f} ms" in third  # the ladder's clock
        await pilot.press("p")
        assert screen.step == 1 and "server → client" in panel.text.plain
        assert "TFO cookie 0011223344556677" in panel.text.plain  # the cookie's bytes

        screen.speed = 8.0
        screen.step = len(screen.events) - 2
        await pilot.press("space")
        for _ in range(50):
            await pilot.pause(0.05)
            if not screen.playing:
                break
        assert not screen.playing and screen.step == len(captured) - 1


async def test_a_view_change_keeps_the_moment(make_app) -> None:
    app = make_app(open_lab="fastopen", open_scenario="cookie-request")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        screen.result = measured("fastopen", "cookie-request")
        await pilot.pause()
        syn_ack = next(
            i
            for i, e in enumerate(screen.events)
            if isinstance(e, Segment) and e.sender == "server"
        )
        model_syn_ack = screen.events[syn_ack]
        screen.step = syn_ack
        await pilot.press("c")  # captured: the kernel's SYN-ACK
        kernel_syn_ack = screen.events[screen.step]
        assert isinstance(kernel_syn_ack, KernelSegment)
        assert kernel_syn_ack.flags == ("SYN", "ACK") and kernel_syn_ack.sender == "server"
        await pilot.press("c")  # both: the same captured segment
        assert screen.step in screen.content.captured
        assert screen.content.captured[screen.step].row.flags == ["SYN", "ACK"]
        await pilot.press("c")  # model: the model's SYN-ACK it was matched with
        assert screen.events[screen.step] is model_syn_ack


async def test_an_extra_kernel_segment_is_marked_and_explained(make_app) -> None:
    app = make_app(open_lab="fastopen", open_scenario="cookie")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        result = measured(
            "fastopen", "cookie", iterations=screen.params.iterations, mutate=extra_ack
        )
        [sentence] = result.scenarios[0].packet_diff
        assert "the model has no such segment" in sentence
        screen.result = result
        await pilot.pause()
        assert "1 disagreement" in banner(screen)
        assert sentence in str(screen.query_one("#packets", Static).render())

        await pilot.press("c", "home")
        assert list(screen.content.sentences.values()) == [sentence]
        [marked] = screen.content.sentences
        assert "✗ ACK" in ladder_text(screen)
        while screen.step < marked:
            await pilot.press("n")
        panel = screen.query_one(StepPanel).text.plain
        assert f"✗ {sentence}" in panel
        ladder = screen.query_one(LadderView)
        layout = ladder.ladder_layout
        assert layout is not None
        first, _ = layout.event_rows[marked]
        strip = ladder._row_strip(first)  # drawn in the "disagree" style (underlined)
        assert any(seg.style and seg.style.underline for seg in strip)
        assert not any(
            seg.style and seg.style.underline
            for row in range(first)
            for seg in ladder._row_strip(row)
        )

        await pilot.press("c")  # both: the same sentence on the kernel's arrow
        assert list(screen.content.sentences.values()) == [sentence]
        assert "✗ kernel ACK" in ladder_text(screen)


async def test_a_segment_the_kernel_did_not_send_is_marked_on_the_models_ladder(make_app) -> None:
    app = make_app(open_lab="fastopen", open_scenario="cookie")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        screen.result = measured(
            "fastopen",
            "cookie",
            iterations=screen.params.iterations,
            mutate=lambda r: r[:2] + r[3:],
        )
        await pilot.pause()
        [sentence] = screen.result.scenarios[0].packet_diff
        [(index, said)] = screen.content.sentences.items()  # the model's view
        assert said == sentence and isinstance(screen.events[index], Segment)
        screen.step = index
        await pilot.pause()
        assert "the kernel sent no such segment" in screen.query_one(StepPanel).text.plain
        await pilot.press("c")  # captured: no arrow to carry it, the results panel lists it
        assert screen.content.sentences == {}
        assert [d.sentence() for d in screen.content.unplaced] == [sentence]


async def test_w_saves_the_capture_as_a_pcap(make_app, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    app = make_app(open_lab="fastopen", open_scenario="cookie-request")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        await pilot.press("w")
        assert "No pcap to save: no real run yet" in banner(screen)
        assert list(tmp_path.iterdir()) == []

        result = measured("fastopen", "cookie-request")
        screen.result = result
        await pilot.pause()
        await pilot.press("w")
        [saved] = tmp_path.glob("tfolab-fastopen-cookie-request-*.pcap")
        assert str(saved) in banner(screen) and "Saved" in banner(screen)
        with saved.open("rb") as handle:
            frames = [dpkt.ethernet.Ethernet(frame) for _, frame in dpkt.pcap.Reader(handle)]
        assert len(frames) == len(result.scenarios[0].frames)
        assert all(isinstance(f.data.data, dpkt.tcp.TCP) for f in frames)


async def test_capture_off_says_packets_were_not_captured(make_app, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    reason = "no CAP_NET_RAW in this namespace"
    app = make_app(open_lab="handshake")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        result = measured("handshake", "plain")
        result.capture_off = reason
        result.scenarios[0].captured, result.scenarios[0].comparison = None, None
        screen.result = result
        await pilot.pause()
        assert "Packets were not captured" in banner(screen) and reason in banner(screen)
        assert "not captured" in str(screen.query_one("#packets", Static).render())

        await pilot.press("c")
        ladder = screen.query_one(LadderView)
        assert ladder.ladder_layout is None and screen.events == ()
        assert "packets were not captured" in ladder.message and reason in ladder.message
        assert "packets were not captured" in screen.query_one(StepPanel).text.plain
        await pilot.press("n", "space")  # nothing to step through, nothing breaks
        assert screen.step == 0

        await pilot.press("w")
        assert "No pcap to save: packets were not captured" in banner(screen)
        assert list(tmp_path.iterdir()) == []


async def test_captured_view_before_any_run_says_so(make_app) -> None:
    app = make_app(open_lab="handshake")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        await pilot.press("c")
        assert "no real run" in screen.query_one(LadderView).message
        await pilot.press("c")  # both: the model's ladder, and the title says none was captured
        assert "(none)" in str(screen.query_one(LadderView).border_title)
        assert len(screen.events) == len(screen.result.scenarios[0].simulation.events)
