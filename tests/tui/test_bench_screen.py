"""Pilot tests of the bench screen: reached by a key and from the palette, its plots
render a result, the latency plot cycles, bad input is refused before anything runs."""

from __future__ import annotations

from textual.widgets import Input, ProgressBar, Static

from tests.labs.bench_fixtures import made_result
from tests.tui.conftest import SIZE
from tfolab.tui.screens.bench import BenchScreen
from tfolab.tui.screens.guide import GuideScreen
from tfolab.tui.screens.help import KEYS
from tfolab.tui.widgets.bench_plot import GainPlot, LatencyPlot


def rendered(widget: GainPlot | LatencyPlot) -> str:
    return str(widget.render())


async def test_b_opens_the_bench_and_its_plots_render_a_result(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("b")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, BenchScreen)
        screen.show_result(made_result())
        await pilot.pause()
        gain = rendered(screen.query_one(GainPlot))
        assert "TFO gain vs RTT" in gain
        assert "measured" in gain and "predicted" in gain and "nginx" in gain
        latency = rendered(screen.query_one(LatencyPlot))
        assert "latency: nginx, RTT 20 ms" in latency  # the last row first
        await pilot.press("l")
        assert "latency: tfolab, RTT 0 ms" in rendered(screen.query_one(LatencyPlot))
        assert screen.query_one("#bench-progress", ProgressBar).progress == 100
        text = str(screen.query_one("#bench-table", Static).render())
        assert "Active 8 Passive 8" in text and "bundled server vs nginx" in text
        await pilot.press("g")
        await pilot.pause()
        assert isinstance(app.screen, GuideScreen)
        assert "Why the gain tends to 100%" in app.screen.lab.guide_text()


async def test_bad_input_is_refused_in_the_banner_and_nothing_runs(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("b")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, BenchScreen)
        screen.query_one("#bench-delays", Input).value = "10,x"
        screen.action_run()
        await pilot.pause()
        banner = str(screen.query_one("#banner", Static).render())
        assert "invalid delay 'x'" in banner
        assert not screen.running and not screen.workers
        screen.query_one("#bench-delays", Input).value = "0"
        screen.query_one("#bench-requests", Input).value = "0"
        screen.action_run()
        assert "--requests 0 is out of range" in str(screen.query_one("#banner", Static).render())
        assert not screen.workers


async def test_the_palette_opens_the_bench(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p")
        await pilot.press(*"bench")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, BenchScreen)


def test_help_lists_the_bench_keys() -> None:
    listed = " ".join(key for _, key, _ in KEYS)
    for binding in BenchScreen.BINDINGS:
        key = binding.key if hasattr(binding, "key") else binding[0]
        assert {"escape": "esc"}.get(key, key) in listed
    assert any(where == "Anywhere" and key == "b" for where, key, _ in KEYS)
