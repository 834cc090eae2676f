"""SVG snapshots of the start screen and a lab screen at 100x32.

Deterministic: fixed HZ, a fixed real-run status, no clock in the header, no
animation. Update with `pytest tests/tui --snapshot-update` after looking at them.
"""

from __future__ import annotations

from tests.tui.conftest import SIZE


def test_start_screen(snap_compare, make_app) -> None:
    assert snap_compare(make_app(), terminal_size=SIZE)


def test_fastopen_cookie_request_step(snap_compare, make_app) -> None:
    app = make_app(open_lab="fastopen", open_scenario="cookie-request")
    assert snap_compare(app, terminal_size=SIZE, press=["n", "n", "n"])


def test_delack_stall(snap_compare, make_app) -> None:
    async def to_the_timer(pilot) -> None:
        screen = pilot.app.screen
        fired = next(
            i for i, event in enumerate(screen.events) if getattr(event, "action", "") == "fired"
        )
        screen.step = fired
        await pilot.pause()

    app = make_app(open_lab="delack", open_scenario="nagle")
    assert snap_compare(app, terminal_size=SIZE, run_before=to_the_timer)


def test_help_screen(snap_compare, make_app) -> None:
    assert snap_compare(make_app(), terminal_size=SIZE, press=["question_mark"])
