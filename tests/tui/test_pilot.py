"""Pilot tests: a user's keys against the real labs and the real model."""

from __future__ import annotations

from textual.widgets import Checkbox, Input, Static, Tree

from tests.tui.conftest import SIZE
from tfolab.tui.screens.guide import GuideScreen
from tfolab.tui.screens.help import KEYS, HelpScreen
from tfolab.tui.screens.lab import LabScreen
from tfolab.tui.screens.start import StartScreen
from tfolab.tui.widgets.ladder import LadderView
from tfolab.tui.widgets.step_panel import StepPanel


def ladder_text(screen: LabScreen) -> str:
    layout = screen.query_one(LadderView).ladder_layout
    assert layout is not None
    return "\n".join("".join(char for char, _, _ in row) for row in layout.rows)


async def test_start_screen_lists_labs_and_scenarios(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, StartScreen)
        tree = app.screen.query_one(Tree)
        labs = [node.data for node in tree.root.children]
        assert [data[0] for data in labs] == ["handshake", "fastopen", "delack", "transfer", "loss"]
        fastopen = tree.root.children[1]
        assert fastopen.children[0].data == ("fastopen", "cookie-request")
        await pilot.press("down", "down")  # handshake/plain, fastopen
        summary = str(app.screen.query_one("#summary", Static).render())
        assert "TCP Fast Open" in summary


async def test_open_lab_and_step_forward_and_back(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("down", "down", "down", "enter")  # fastopen / cookie-request
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        assert screen.params.scenario == "cookie-request"
        panel = screen.query_one(StepPanel)
        first = panel.text.plain
        assert first.startswith("Step 1 of")
        await pilot.press("n", "right")
        assert screen.step == 2
        second = panel.text.plain
        assert second.startswith("Step 3 of") and second != first
        assert screen.query_one(LadderView).step == 2
        await pilot.press("p")
        assert screen.step == 1
        await pilot.press("left", "left")
        assert screen.step == 0 and panel.text.plain == first
        await pilot.press("n", "n", "home")
        assert screen.step == 0


async def test_changing_the_delay_changes_the_ladder_times(make_app) -> None:
    app = make_app(open_lab="handshake")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        before = ladder_text(screen)
        assert "  10.0" in before and "  25.0" not in before
        await pilot.click("#delay")
        await pilot.press("end", "backspace", "backspace", "2", "5")
        await pilot.pause()
        assert screen.result is not None and screen.result.delay_ms == 25.0
        after = ladder_text(screen)
        assert "  25.0" in after and "  50.0" in after
        assert screen.result.scenarios[0].measurements[0].predicted_ms == 100.0  # 4D


async def test_bad_delay_shows_an_inline_error(make_app) -> None:
    app = make_app(open_lab="handshake")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        await pilot.click("#delay")
        await pilot.press("end", "x", "s")  # "10xs"
        await pilot.pause()
        assert screen.query_one("#delay", Input).value == "10xs"
        error = screen.query_one("#delay-error", Static)
        assert error.display and "invalid delay" in str(error.render())
        assert screen.query_one("#delay", Input).has_class("-invalid")
        assert screen.result is not None and screen.result.delay_ms == 10.0
        await pilot.press("backspace", "backspace")
        await pilot.pause()
        assert not error.display


async def test_a_switch_resimulates(make_app) -> None:
    app = make_app(open_lab="delack", open_scenario="nagle")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        assert screen.result is not None
        stalled = screen.result.scenarios[0].measurements[-1].predicted_ms
        checkbox = screen.query_one("#knob-nodelay", Checkbox)
        checkbox.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert checkbox.value and screen.params.settings == {"nodelay": "true"}
        fast = screen.result.scenarios[0].measurements[-1].predicted_ms
        assert fast < stalled - 30


async def test_scenario_select_resets_iterations(make_app) -> None:
    app = make_app(open_lab="fastopen", open_scenario="cookie-request")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        screen.select_scenario("cookie")
        await pilot.pause()
        assert screen.params.scenario == "cookie" and screen.params.iterations == 3
        assert len(screen.result.scenarios[0].measurements) == 3


async def test_help_and_guide_open_and_close(make_app) -> None:
    app = make_app(open_lab="delack")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, LabScreen)
        await pilot.press("g")
        assert isinstance(app.screen, GuideScreen)
        assert "Delayed ACK" in app.screen.lab.guide_text()
        await pilot.press("g")
        assert isinstance(app.screen, LabScreen)


async def test_command_palette_opens_a_scenario(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p")
        await pilot.press(*"delack / quickack")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, LabScreen)
        assert app.screen.lab.name == "delack" and app.screen.params.scenario == "quickack"


async def test_play_reaches_the_end_and_stops(make_app) -> None:
    app = make_app(open_lab="handshake")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        await pilot.press("plus", "plus", "plus")  # 2 -> 16? capped at 8 steps/s
        assert screen.speed == 8.0
        screen.step = len(screen.events) - 2
        await pilot.press("space")
        assert screen.playing
        for _ in range(50):
            await pilot.pause(0.05)
            if not screen.playing:
                break
        assert not screen.playing and screen.step == len(screen.events) - 1


async def test_runs_off_banner_and_r_explains(make_app) -> None:
    from tfolab.lab.environment import RealRunStatus

    off = RealRunStatus(False, "not root and user namespaces are disabled", "Run `sudo tfolab`.")
    app = make_app(open_lab="handshake", real_runs=off)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        banner = app.screen.query_one("#banner", Static)
        assert "Real runs off" in str(banner.render())
        await pilot.press("r")
        assert "Cannot run for real" in str(banner.render())
        assert not app.screen.query_one("#results").display


def test_help_lists_every_binding() -> None:
    listed = " ".join(key for _, key, _ in KEYS)
    aliases = {
        "right": "→",
        "left": "←",
        "question_mark": "?",
        "equals_sign": "+",
        "plus": "+",
        "minus": "-",
        "escape": "esc",
    }
    for screen in (LabScreen, StartScreen):
        for binding in screen.BINDINGS:
            for key in binding.key.split(",") if hasattr(binding, "key") else [binding[0]]:
                assert aliases.get(key, key) in listed, key


async def test_the_replay_scenario_shows_the_request_delivered_twice(make_app) -> None:
    """Stepping through fastopen/replay: the raw-socket resend, the second child, the RSTs."""
    app = make_app(open_lab="fastopen", open_scenario="replay")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        assert screen.params.scenario == "replay"
        panel = screen.query_one(StepPanel)
        seen: list[str] = []
        for _ in range(len(screen.events)):
            seen.append(panel.text.plain)
            await pilot.press("n")
        text = "\n".join(seen)
        assert "raw socket" in text  # the attacker's resend of iteration 1's SYN
        last = screen.params.iterations  # the replay is the scenario's last iteration
        for iteration in (1, last):
            heading = f"iteration {iteration} "
            assert any(heading in t.split("\n", 1)[0] and "read() 16 B" in t for t in seen), (
                f"the server application reads the request in iteration {iteration}"
            )
        assert "RST" in text
        assert "TIME_WAIT" in text


async def test_the_time_sequence_graph_opens_on_t_and_closes(make_app) -> None:
    from tfolab.tui.screens.seq_graph import SeqGraphScreen, SeqPlot

    app = make_app(open_lab="fastopen", open_scenario="large-data")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        await pilot.press("t")
        assert isinstance(app.screen, SeqGraphScreen)
        plots = list(app.screen.query(SeqPlot))
        assert [p.graph.source for p in plots] == ["model"]  # no real run yet
        assert plots[0].graph.sender == "server" and plots[0].graph.payload_bytes == 3000
        title = str(app.screen.query_one("#seq-title", Static).render())
        assert title.startswith("fastopen/large-data: connection 1, the server's data")
        await pilot.press("t")
        assert app.screen is screen


async def test_the_graph_waits_for_the_predictions(make_app) -> None:
    app = make_app(demo=False, open_lab="fastopen", open_scenario="large-data")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        screen.set_focus(None)
        await pilot.press("t")
        assert app.screen is screen  # the graph would show the model's answer
        assert "Predict first" in str(screen.query_one("#banner", Static).render())


async def test_f_unfolds_a_flight_and_folds_it_again(make_app, tmp_path) -> None:
    """A 5-segment answer is one arrow by default; f draws every segment, f folds again."""
    from pathlib import Path

    from tfolab.lab.catalog import load_labs

    source = Path(__file__).parents[2] / "tfolab" / "lab" / "labs"
    for name in ("handshake.toml", "handshake.md"):
        (tmp_path / name).write_text((source / name).read_text())
    with (tmp_path / "handshake.toml").open("a") as lab_file:
        lab_file.write('\n[[scenario]]\nname = "big-answer"\nmtu = 1500\nresponse_bytes = 7240\n')
    app = make_app(labs=load_labs(tmp_path), open_lab="handshake", open_scenario="big-answer")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        ladder = screen.query_one(LadderView)
        layout = ladder.ladder_layout
        assert layout is not None and layout.folded_into  # the answer's flight, its ACKs
        assert "flights folded" in layout.scale_text()
        assert any("5 segments, 7,240 bytes" in line or "5 segs" in line
                   for line in layout.text())  # fmt: skip
        await pilot.press("f")
        unfolded = ladder.ladder_layout
        assert unfolded is not None and not unfolded.folded_into
        assert "every segment" in str(screen.query_one("#banner", Static).render())
        await pilot.press("f")
        assert ladder.ladder_layout is not None and ladder.ladder_layout.folded_into
