"""Predict first: the form before the ladder, the grade after it, the saved attempt,
the guide's hidden answers, demo mode and the delay presets (Pilot, the real model)."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Input, Markdown, Select, Static

from tests.tui.conftest import SIZE
from tfolab.model.scenario import MAX_DELAY_MS
from tfolab.tui.screens.guide import GuideScreen
from tfolab.tui.screens.lab import LabScreen
from tfolab.tui.widgets.ladder import LadderView
from tfolab.tui.widgets.predict import GradePanel, PredictForm
from tfolab.view.guide import HIDDEN, hide_answers
from tfolab.view.presets import PRESETS


def banner(screen: LabScreen) -> str:
    return str(screen.query_one("#banner", Static).render())


async def type_into(pilot, selector: str, text: str) -> None:
    field = pilot.app.screen.query_one(selector, Input)
    field.value = ""
    field.focus()
    await pilot.press(*list(text))


async def test_predict_then_see_the_grade_and_the_saved_attempt(make_app, tmp_path: Path) -> None:
    app = make_app(demo=False, open_lab="fastopen", open_scenario="cookie")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        form = screen.query_one(PredictForm)
        assert form.display and not screen.query_one(LadderView).display
        assert [q.name for q in form.quantities] == ["iteration 1", "iterations 2+"]
        intro = str(screen.query_one("#predict-intro", Static).render())
        assert "D = 10 ms one way, RTT = 2D = 20 ms" in intro
        assert "20.0" not in intro  # nothing of the model's times before predicting
        screen.set_focus(None)
        await pilot.press("r")  # no run before the predictions
        assert not screen.running and "Predict first" in banner(screen)

        await type_into(pilot, "#predict-0", "4Q")
        await pilot.press("enter")
        error = str(screen.query_one("#predict-0-error", Static).render())
        assert error.startswith("cannot read 'Q'") and "\n" not in error
        assert form.display  # still asking

        await type_into(pilot, "#predict-0", "4D")
        await type_into(pilot, "#predict-1", "1 RTT")
        await type_into(pilot, "#student", "Ada")
        await type_into(pilot, "#results-dir", str(tmp_path))
        await pilot.press("enter")
        await pilot.pause()
        assert not form.display and screen.query_one(LadderView).display
        grades = str(screen.query_one(GradePanel).render())
        assert "Your predictions: 1/2 as the model predicts" in grades
        assert "✗ iteration 1: you predicted 4D = 40.0 ms; the model says 2D = 20.0 ms" in grades
        assert "✓ iterations 2+" in grades
        assert "1/2 as the model predicts" in banner(screen)
        (saved,) = tmp_path.glob("ada-fastopen-cookie-*.json")
        data = json.loads(saved.read_text())
        assert (data["student"], data["delay_ms"], data["grade"]["model_right"]) == ("Ada", 10, 1)
        assert f"saved as {saved}" in grades.replace("\n", "")

        # A prediction in D is graded again at another delay.
        await type_into(pilot, "#delay", "25")
        await pilot.pause()
        grades = str(screen.query_one(GradePanel).render())
        assert "you predicted 4D = 100.0 ms; the model says 2D = 50.0 ms" in grades

        # Another scenario asks again; coming back does not.
        screen.select_scenario("plain")
        await pilot.pause()
        assert form.display and screen.predicting
        screen.select_scenario("cookie")
        await pilot.pause()
        assert not form.display


async def test_a_bad_results_folder_is_said_inline(make_app, tmp_path: Path) -> None:
    app = make_app(demo=False, open_lab="handshake")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        await type_into(pilot, "#predict-0", "4D")
        await type_into(pilot, "#predict-1", "4D")
        await type_into(pilot, "#results-dir", str(tmp_path / "missing"))
        await pilot.press("enter")
        error = str(screen.query_one("#results-error", Static).render())
        assert "does not exist" in error
        await type_into(pilot, "#results-dir", "")
        await pilot.press("enter")
        await pilot.pause()
        assert not screen.predicting
        grades = str(screen.query_one(GradePanel).render())
        assert "2/2 as the model predicts" in grades and "not saved" in grades


async def test_demo_mode_asks_nothing(make_app) -> None:
    app = make_app(demo=True, open_lab="handshake")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert not screen.query_one(PredictForm).display
        assert screen.query_one(LadderView).display and not screen.predicting


async def test_the_guide_hides_its_answers_until_a(make_app) -> None:
    app = make_app(demo=False, open_lab="fastopen")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.screen.set_focus(None)
        await pilot.press("g")
        await pilot.pause()
        guide = app.screen
        assert isinstance(guide, GuideScreen)
        text = guide.query_one(Markdown).source
        assert "4D, 2D and 4D" not in text and HIDDEN in text
        await pilot.press("a")
        await pilot.pause()
        assert "4D, 2D and 4D" in guide.query_one(Markdown).source


def test_every_answer_of_every_guide_is_hidden() -> None:
    labs = Path(__file__).resolve().parents[2] / "tfolab" / "lab" / "labs"
    answered = 0
    for guide in labs.glob("*.md"):
        text = guide.read_text()
        hidden, count = hide_answers(text)
        assert count == text.count("\n> Answer:")
        assert "> Answer:" not in hidden
        assert hidden.count("**") >= text.count("\n**")  # the questions stay
        answered += count > 0
    assert answered >= 3


async def test_a_preset_fills_the_delay(make_app) -> None:
    assert all(0 < p.one_way_ms <= MAX_DELAY_MS for p in PRESETS)
    assert [p.rtt_ms for p in PRESETS] == [0.5, 30, 150, 600]
    app = make_app(open_lab="handshake")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        screen.query_one("#preset", Select).value = "satellite"
        await pilot.pause()
        assert screen.query_one("#delay", Input).value == "300"
        assert screen.result is not None and screen.result.delay_ms == 300
        await type_into(pilot, "#delay", "0.25")
        await pilot.pause()
        assert screen.query_one("#preset", Select).value == "LAN"
        await type_into(pilot, "#delay", "7")
        await pilot.pause()
        assert screen.query_one("#preset", Select).value == Select.NULL


async def test_jump_to_an_iteration_and_the_headline_path(make_app) -> None:
    from tests.tui.test_captured_view import measured
    from tfolab.tui.screens.jump import JumpScreen
    from tfolab.view.focus import iteration_starts

    app = make_app(open_lab="fastopen", open_scenario="cookie")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        full = len(screen.events)
        await pilot.press("i")
        await pilot.pause()
        assert isinstance(app.screen, JumpScreen)
        await pilot.press("9", "enter")  # no such iteration: said, still asking
        assert isinstance(app.screen, JumpScreen)
        assert "give one of 0, 1, 2, 3" in str(app.screen.query_one("#jump-error", Static).render())
        await pilot.press("backspace", "3", "enter")
        await pilot.pause()
        assert app.screen is screen
        assert screen.step == iteration_starts(screen.events)[3]
        assert screen.events[screen.step].iteration == 3

        await pilot.press("h")
        await pilot.pause()
        assert "headline path only" in screen.content.title
        assert len(screen.events) < full / 2
        assert screen.events[screen.step].iteration == 3  # the same moment, still
        assert all(e.iteration >= 1 for e in screen.events)

        # It works on the kernel's ladder too (a made-up capture, as the captured-view tests).
        screen.result = measured("fastopen", "cookie", iterations=screen.params.iterations)
        await pilot.pause()
        for _ in range(2):
            await pilot.press("c")
            await pilot.pause()
            assert screen.content.view in ("captured", "both")
            assert screen.events and all(e.iteration >= 1 for e in screen.events)
        await pilot.press("h")
        await pilot.pause()
        assert "headline path only" not in screen.content.title


def test_the_form_names_the_setup_never_the_outcome() -> None:
    """Every scenario's summary reads 'setup: outcome'; the form shows the setup only."""
    from tfolab.lab.catalog import load_labs
    from tfolab.tui.widgets.predict import intro_text

    for lab in load_labs():
        for scenario in lab.scenarios:
            shown = intro_text(lab.headline, scenario.name, scenario.summary, 10).plain
            if ":" in scenario.summary:
                outcome = scenario.summary.split(":", 1)[1].strip()
                assert outcome not in shown, f"{lab.name}/{scenario.name} gives away {outcome!r}"
    cookie = next(s for s in next(x for x in load_labs() if x.name == "fastopen").scenarios
                  if s.name == "cookie")  # fmt: skip
    assert "round trip saved" not in intro_text("", "cookie", cookie.summary, 10).plain
