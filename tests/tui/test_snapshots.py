"""SVG snapshots of the start screen and lab screens: 100x32, and the two sizes a
classroom uses, 120x36 and 80x24, where no label, note or explanation may be cut.

Deterministic: fixed HZ, a fixed real-run status, no clock in the header, no
animation. Update with `pytest tests/tui --snapshot-update` after looking at them.
Besides the picture, the TEXT of each classroom-size screen is checked: no "…"
anywhere (nothing cut), the ladder's scale stated.
"""

from __future__ import annotations

import html
import re
from collections.abc import Awaitable, Callable

from tests.tui.conftest import SIZE

SMALL = (80, 24)
LARGE = (120, 36)


def screen_text(svg: str) -> str:
    """The characters of an exported screen, one line per row (from its <text> elements)."""
    rows: dict[str, list[str]] = {}
    for y, chunk in re.findall(r'<text [^>]*y="([\d.]+)"[^>]*>(.*?)</text>', svg):
        text = html.unescape(re.sub(r"<[^>]+>", "", chunk)).replace("\xa0", " ")
        rows.setdefault(y, []).append(text)
    return "\n".join("".join(parts) for _, parts in sorted(rows.items(), key=lambda r: float(r[0])))


def keeping_text(
    texts: list[str], then: Callable[..., Awaitable[None]] | None = None
) -> Callable[..., Awaitable[None]]:
    async def run_before(pilot) -> None:
        if then is not None:
            await then(pilot)
        await pilot.pause()
        texts.append(screen_text(pilot.app.export_screenshot()))

    return run_before


def assert_nothing_cut(text: str) -> None:
    cut = [line for line in text.splitlines() if "…" in line]
    assert not cut, cut


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


async def _to_syn_ack(pilot) -> None:
    for _ in range(3):
        await pilot.press("n")


def test_handshake_at_80x24(snap_compare, make_app) -> None:
    texts: list[str] = []
    app = make_app(open_lab="handshake")
    assert snap_compare(app, terminal_size=SMALL, run_before=keeping_text(texts, _to_syn_ack))
    (text,) = texts
    assert_nothing_cut(text)
    assert "1 row = 2 ms" in text
    assert "Step 4 of" in text and "tcp_rcv_synsent_state_process" in text  # explanation whole


def test_handshake_at_120x36(snap_compare, make_app) -> None:
    texts: list[str] = []

    async def to_the_top(pilot) -> None:
        await pilot.press("n")

    app = make_app(open_lab="handshake")
    assert snap_compare(app, terminal_size=LARGE, run_before=keeping_text(texts, to_the_top))
    (text,) = texts
    assert_nothing_cut(text)
    assert "SYN seq=0" in text and ("sackOK" in text or "sack TS" in text)  # the SYN's options


def test_fastopen_headline_path_at_120x36(snap_compare, make_app) -> None:
    texts: list[str] = []

    async def headline(pilot) -> None:
        await pilot.press("h")

    app = make_app(open_lab="fastopen", open_scenario="cookie")
    assert snap_compare(app, terminal_size=LARGE, run_before=keeping_text(texts, headline))
    (text,) = texts
    assert_nothing_cut(text)
    assert "headline path only" in text and "warm-up" not in text


def test_delack_at_80x24(snap_compare, make_app) -> None:
    texts: list[str] = []

    async def to_iteration_2(pilot) -> None:
        await pilot.press("i", "2", "enter")

    app = make_app(open_lab="delack", open_scenario="nagle")
    assert snap_compare(app, terminal_size=SMALL, run_before=keeping_text(texts, to_iteration_2))
    (text,) = texts
    assert_nothing_cut(text)
    assert "iteration 2" in text


def test_predict_form_at_80x24(snap_compare, make_app) -> None:
    texts: list[str] = []
    app = make_app(demo=False, open_lab="fastopen", open_scenario="cookie")
    assert snap_compare(app, terminal_size=SMALL, run_before=keeping_text(texts))
    (text,) = texts
    assert_nothing_cut(text)
    assert "Predict first" in text and "Headline, iteration 1" in text
    assert "20.0" not in text  # no model time shows before the prediction


def test_graded_predictions_at_120x36(snap_compare, make_app) -> None:
    texts: list[str] = []

    async def predict(pilot) -> None:
        await pilot.press(*"4D")
        await pilot.press("tab", *"2D", "enter")

    app = make_app(demo=False, open_lab="fastopen", open_scenario="cookie")
    assert snap_compare(app, terminal_size=LARGE, run_before=keeping_text(texts, predict))
    (text,) = texts
    assert_nothing_cut(text)
    assert "Your predictions: 1/2 as the model predicts" in text
