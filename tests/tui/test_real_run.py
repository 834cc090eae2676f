"""A real run from the UI: press r, wait for the worker, see measured values.

Needs a lab namespace and a delay backend: the `delaying_machine` fixture
(tests/conftest.py) skips with the probe's reason where real runs are impossible.
"""

from __future__ import annotations

import time

import pytest
from textual.widgets import DataTable, Static

from tests.conftest import TIMING, LabMachine
from tests.timing import assert_in_band
from tests.tui.conftest import SIZE
from tfolab.tui.screens.lab import LabScreen
from tfolab.tui.widgets.ladder import LadderView

pytestmark = pytest.mark.root


async def _run_and_wait(pilot, screen: LabScreen, timeout_s: float = 90.0) -> None:
    await pilot.press("r")  # a short run may be over by the time press() returns
    deadline = time.monotonic() + timeout_s
    while screen.running and time.monotonic() < deadline:
        await pilot.pause(0.1)
    assert not screen.running, "the real run did not finish in time"


def delaying_machine_error_ms(machine: LabMachine) -> float:
    """The backend's stated error per delayed packet (0.4 ms NFQUEUE, 0.3 ms netem)."""
    return {"nfqueue": 0.4, "netem": 0.3}[machine.delay_backend]


@TIMING
@pytest.mark.parametrize(("lab", "scenario"), [("fastopen", "cookie"), ("handshake", "plain")])
async def test_real_run_fills_the_table(
    make_app, delaying_machine, lab: str, scenario: str
) -> None:
    app = make_app(open_lab=lab, open_scenario=scenario)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        await pilot.click("#delay")
        await pilot.press(
            "end", "backspace", "backspace", "5", "escape"
        )  # escape: back to the ladder
        await pilot.pause()
        assert screen.params.one_way_delay_ms == 5.0
        await _run_and_wait(pilot, screen)
        result = screen.result
        assert result is not None and result.measured, str(
            screen.query_one("#banner", Static).render()
        )
        table = screen.query_one("#measured", DataTable)
        assert table.row_count == screen.params.iterations
        measured = [m.measured_ms for m in result.scenarios[0].measurements]
        assert all(value is not None and value > 0 for value in measured)
        first_row = [str(cell) for cell in table.get_row_at(0)]
        assert first_row[2] == f"{measured[0]:.1f}"
        layout = screen.query_one(LadderView).ladder_layout
        assert layout is not None
        text = "\n".join("".join(c for c, _, _ in row) for row in layout.rows)
        assert f"measured {measured[0]:.1f} ms" in text
        # Physics at D = 5 ms: a plain exchange waits two round trips (4D = 20 ms), a Fast
        # Open request with its cookie one (2D = 10 ms); late by at most the band's slack.
        hops = {"handshake": 4, "fastopen": 2}[lab]
        slack = hops * delaying_machine_error_ms(delaying_machine) + 1.0
        for i, value in enumerate(measured, 1):
            assert value is not None
            assert_in_band(value, hops * 5.0 - 0.1, hops * 5.0 + slack, f"{lab} #{i}")


async def test_predict_run_and_see_the_grade(make_app, delaying_machine, tmp_path) -> None:
    """Predict first, run for real, and the grade against the measurement is shown and saved."""
    import json

    from textual.widgets import Input

    from tfolab.tui.widgets.predict import GradePanel

    app = make_app(demo=False, open_lab="handshake", open_scenario="plain")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen) and screen.predicting
        for selector, text in (
            ("#predict-0", "2 RTT"),
            ("#predict-1", "4D"),
            ("#student", "Ada"),
            ("#results-dir", str(tmp_path)),
        ):
            field = screen.query_one(selector, Input)
            field.value = text
        screen.query_one("#predict-0", Input).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert not screen.predicting
        await _run_and_wait(pilot, screen)
        result = screen.result
        assert result is not None and result.measured, str(
            screen.query_one("#banner", Static).render()
        )
        grades = str(screen.query_one(GradePanel).render())
        assert "measured" in grades
        saved = sorted(tmp_path.glob("ada-handshake-plain-*.json"))
        assert len(saved) == 1  # the run's measurement went into the committed attempt
        data = json.loads(saved[0].read_text())
        measured = [m.measured_ms for m in result.scenarios[0].measurements]
        assert data["measured"]["iteration 1"][0] == round(measured[0], 3)
        assert data["grade"]["measured_right"] is not None
        if delaying_machine.delay_backend != "none":
            # 2 RTT at D = 10 ms is the model's 40 ms: right within its allowance, if the
            # kernel agrees with the model (the band tests say whether it does).
            assert data["grade"]["model_right"] == 2
