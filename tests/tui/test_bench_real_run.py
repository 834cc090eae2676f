"""The bench from the UI for real: r runs a small bench, the progress bar fills, the
plots and the table show its result, and the counters prove TFO.

Needs a lab namespace (D = 0 needs no delay backend): the `lab_machine` fixture
skips with the probe's reason where real runs are impossible.
"""

from __future__ import annotations

import time

import pytest
from textual.widgets import Input, ProgressBar, Static

from tfolab.tui.screens.bench import BenchScreen
from tfolab.tui.widgets.bench_plot import GainPlot, LatencyPlot

pytestmark = pytest.mark.root
N = 16


async def test_r_runs_a_small_bench_and_shows_it(make_app, lab_machine) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("b")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, BenchScreen)
        screen.query_one("#bench-delays", Input).value = "0"
        screen.query_one("#bench-requests", Input).value = str(N)
        screen.query_one("#bench-peer").value = "none"  # type: ignore[attr-defined]
        await pilot.press("r")
        deadline = time.monotonic() + 120
        while (screen.running or screen.result is None) and time.monotonic() < deadline:
            await pilot.pause(0.1)
        result = screen.result
        assert result is not None, str(screen.query_one("#banner", Static).render())
        assert screen.query_one("#bench-progress", ProgressBar).progress == 100
        [row] = result.rows
        assert row.server == "tfolab" and row.delay_ms == 0.0
        assert row.modes["tfo"].counters["TCPFastOpenActive"] == N
        assert row.modes["tfo"].counters["TCPFastOpenPassive"] == N
        assert row.modes["plain"].counters["TCPFastOpenActive"] == 0
        assert "measured" in str(screen.query_one(GainPlot).render())
        assert "latency: tfolab, RTT 0 ms" in str(screen.query_one(LatencyPlot).render())
        assert f"Active {N} Passive {N}" in str(screen.query_one("#bench-table", Static).render())
