"""SVG snapshots of the start screen and lab screens: the start and help screens at
100x32, every ladder at one of the two sizes a classroom uses, 120x36 and 80x24,
where no label, note or explanation may be cut.

Deterministic: fixed HZ, a fixed real-run status, no clock in the header, no
animation. Update with `pytest tests/tui --snapshot-update` after looking at them.
Besides the picture, the TEXT of every snapshot is checked: the model's times it
shows (physics at D = 10 ms, written here, not computed), or, where predictions
come first, that it shows none; the words each screen exists to show; no "…"
anywhere (nothing cut); and the ladder's scale where it is stated.
(At 100x32 the lab screen keeps its side panel, and a ladder's side texts get 10
columns: notes are cut there by design, the whole in the step panel; no snapshot
pins that.)
"""

from __future__ import annotations

import html
import re
from collections.abc import Awaitable, Callable

from tests.tui.conftest import SIZE

SMALL = (80, 24)
LARGE = (120, 36)


TEXT = re.compile(r'<text [^>]*x="([\d.]+)" y="([\d.]+)" textLength="([\d.]+)"[^>]*>(.*?)</text>')


def screen_text(svg: str) -> str:
    """The characters of an exported screen, one line per row (from its <text> elements),
    each placed at its column: the export draws runs of blanks as background only."""
    rows: dict[float, dict[int, str]] = {}
    for x, y, length, chunk in TEXT.findall(svg):
        text = html.unescape(re.sub(r"<[^>]+>", "", chunk)).replace("\xa0", " ")
        if text:
            column = round(float(x) / (float(length) / len(text)))
            rows.setdefault(float(y), {})[column] = text
    lines = []
    for _, chunks in sorted(rows.items()):
        line = ""
        for column, text in sorted(chunks.items()):
            line = line.ljust(column) + text
        lines.append(line.rstrip())
    return "\n".join(lines)


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


MODEL_TIME = re.compile(r"\d+\.\d ms")  # how the view writes a model time (format_ms)


def at_ms(text: str, ms: float, words: str) -> bool:
    """A ladder row whose time column reads `ms` holds `words`."""
    return any(
        line.startswith("│") and line[1:7].strip() == f"{ms:.1f}" and words in line
        for line in text.splitlines()
    )


def assert_no_model_time(text: str) -> None:
    """Predict first: a screen before the predictions shows no time of the model's."""
    shown = [line for line in text.splitlines() if MODEL_TIME.search(line)]
    assert not shown, shown


async def _to_syn_ack(pilot) -> None:
    for _ in range(3):
        await pilot.press("n")


def test_start_screen(snap_compare, make_app) -> None:
    texts: list[str] = []
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=keeping_text(texts))
    (text,) = texts
    assert "Real runs: on (root, a private network namespace per run)" in text
    for lab in ("The three-way handshake", "TCP Fast Open", "Delayed ACK meets Nagle"):
        assert lab in text
    for scenario in ("cookie-request", "invalid-cookie", "syn-data-lost", "nagle"):
        assert f"── {scenario}  " in text
    assert "With D = 10 ms, when does connect() return?" in text
    assert_no_model_time(text)  # predict first: the answers are not on the start screen
    assert_nothing_cut(text)


def test_fastopen_cookie_request_step(snap_compare, make_app) -> None:
    texts: list[str] = []
    app = make_app(open_lab="fastopen", open_scenario="cookie-request")
    assert snap_compare(app, terminal_size=LARGE, run_before=keeping_text(texts, _to_syn_ack))
    (text,) = texts
    # the model's times: the SYN-ACK with the cookie arrives at 2D = 20 ms
    assert "Step 4 of 28 · 20.0 ms · iteration 1 · client" in text
    assert "SYN,ACK ack=1 TFO cookie" in text and "SYN seq=0 TFO req" in text
    assert "client caches the new TFO cookie for 127.0.0.1" in text
    assert "step 3: SYN,ACK seq=0 ack=1 TFO cookie, arrives 20.0 ms" in text
    assert at_ms(text, 20.0, "• caches the new TFO")
    assert_nothing_cut(text)


def test_delack_stall(snap_compare, make_app) -> None:
    async def to_the_timer(pilot) -> None:
        screen = pilot.app.screen
        fired = next(
            i for i, event in enumerate(screen.events) if getattr(event, "action", "") == "fired"
        )
        screen.step = fired
        await pilot.pause()

    texts: list[str] = []
    app = make_app(open_lab="delack", open_scenario="nagle")
    assert snap_compare(app, terminal_size=LARGE, run_before=keeping_text(texts, to_the_timer))
    (text,) = texts
    # the model's times: iteration 2's stall ends when the server's timer fires
    assert "Step 32 of 105 · 113.2 ms · iteration 2 · server" in text
    assert "delack timer fired (deadline 113.2 ms)" in text
    assert "the timer leaves pingpong (interactive) mode and resets ato to" in text
    assert at_ms(text, 113.2, "ACK seq=17 ack=27")
    assert "≈ 43.2 ms later" in text  # the stall, compressed: 113.2 - 70.0
    assert_nothing_cut(text)


async def _help(pilot) -> None:
    await pilot.press("question_mark")


def test_help_screen(snap_compare, make_app) -> None:
    texts: list[str] = []
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=keeping_text(texts, _help))
    (text,) = texts
    assert "Keys   (? / Esc closes)" in text
    for does in ("command palette", "run the scenario for real", "jump to iteration N"):
        assert does in text
    assert_no_model_time(text)  # over the start screen: still no answer shown
    assert_nothing_cut(text)


def test_handshake_at_80x24(snap_compare, make_app) -> None:
    texts: list[str] = []
    app = make_app(open_lab="handshake")
    assert snap_compare(app, terminal_size=SMALL, run_before=keeping_text(texts, _to_syn_ack))
    (text,) = texts
    assert_nothing_cut(text)
    assert "1 row = 2 ms" in text
    assert "tcp_rcv_synsent_state_process" in text  # the explanation whole
    # the model's times: the third segment leaves at 2D and arrives at 3D
    assert "Step 4 of 78 · 20.0 ms · iteration 1 · client → server" in text
    assert "ACK seq=1 ack=1, arrives 30.0 ms" in text
    assert at_ms(text, 20.0, "connect()")


def test_handshake_at_120x36(snap_compare, make_app) -> None:
    texts: list[str] = []

    async def to_the_top(pilot) -> None:
        await pilot.press("n")

    app = make_app(open_lab="handshake")
    assert snap_compare(app, terminal_size=LARGE, run_before=keeping_text(texts, to_the_top))
    (text,) = texts
    assert_nothing_cut(text)
    assert "SYN seq=0" in text and ("sackOK" in text or "sack TS" in text)  # the SYN's options
    # the model's times: the SYN arrives at D, connect() returns at 2D
    assert "Step 2 of 78 · 0.0 ms · iteration 1 · client → server" in text
    assert "SYN seq=0, arrives 10.0 ms" in text
    assert at_ms(text, 20.0, "connect() returns")


def test_fastopen_headline_path_at_120x36(snap_compare, make_app) -> None:
    texts: list[str] = []

    async def headline(pilot) -> None:
        await pilot.press("h")

    app = make_app(open_lab="fastopen", open_scenario="cookie")
    assert snap_compare(app, terminal_size=LARGE, run_before=keeping_text(texts, headline))
    (text,) = texts
    assert_nothing_cut(text)
    assert "headline path only" in text and "warm-up" not in text
    # the model's times: after the warm-up, the request in the SYN answered 2D later
    assert "Step 1 of 33 · 40.0 ms · iteration 1 · client" in text
    assert at_ms(text, 40.0, "sendto() 16 B,") and at_ms(text, 60.0, "sendto() returns")


def test_delack_at_80x24(snap_compare, make_app) -> None:
    texts: list[str] = []

    async def to_iteration_2(pilot) -> None:
        await pilot.press("i", "2", "enter")

    app = make_app(open_lab="delack", open_scenario="nagle")
    assert snap_compare(app, terminal_size=SMALL, run_before=keeping_text(texts, to_iteration_2))
    (text,) = texts
    assert_nothing_cut(text)
    assert "iteration 2" in text
    # the model's times: iteration 2's first write at 60 ms, the server's timer armed at 70
    assert "Step 24 of 105 · 60.0 ms · iteration 2 · client" in text
    assert at_ms(text, 60.0, "• first data:") and at_ms(text, 70.0, "◷ delack armed")


def test_predict_form_at_80x24(snap_compare, make_app) -> None:
    texts: list[str] = []
    app = make_app(demo=False, open_lab="fastopen", open_scenario="cookie")
    assert snap_compare(app, terminal_size=SMALL, run_before=keeping_text(texts))
    (text,) = texts
    assert_nothing_cut(text)
    assert "Predict first" in text and "Headline, iteration 1" in text
    assert_no_model_time(text)  # no model time shows before the prediction
    assert "20.0" not in text and "40.0" not in text


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
    # the model's times: 2D for iteration 1 and 2+, graded against 4D and 2D
    assert "predicted 4D = 40.0 ms;" in text and "predicted 2D = 20.0 ms;" in text
    assert sum("the model says 2D = 20.0" in line for line in text.splitlines()) == 2
    assert at_ms(text, 10.0, "SYN,ACK ack=1 TFO cookie")  # the warm-up SYN-ACK leaves at D
