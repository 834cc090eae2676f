"""The ASCII ladder (the UI's layout in ASCII): readable, within its width, for every scenario."""

from __future__ import annotations

import pytest

from tests.model.scenarios import SCENARIOS, scenario
from tfolab.model import simulate
from tfolab.view.ladder_text import render_ladder


@pytest.mark.parametrize("width", [100, 80, 60])
@pytest.mark.parametrize("item", SCENARIOS, ids=lambda s: f"{s.lab}-{s.name}")
def test_every_line_fits(item, width: int) -> None:
    sim = simulate(item.config, one_way_delay_ms=10, iterations=item.iterations)
    text = render_ladder(sim, width=width)
    assert text.isascii()
    assert max(len(line) for line in text.splitlines()) <= width
    assert "--->" not in text or "|" in text


def test_the_ladder_tells_the_fastopen_story() -> None:
    item = scenario("fastopen", "cookie")
    sim = simulate(item.config, one_way_delay_ms=10, iterations=1)
    text = render_ladder(sim)
    assert "SYN seq=0 len=16 TFO cookie" in text
    assert "->|" in text and "|<-" in text  # arrows reach the server and come back
    assert "sendto() 16 B, MSG_FASTOPEN" in text
    assert "iteration 1, client" in text
    assert "setup / warm-up" in text
    assert "2D: SYN+data, response" in text
    assert "TCPFastOpenActive +1" in text


def test_timers_and_predictions_appear() -> None:
    item = scenario("delack", "nagle")
    sim = simulate(item.config, one_way_delay_ms=10, iterations=3)
    text = render_ladder(sim, width=80)
    assert "delack timer armed (deadline" in text and "delack timer fired" in text
    assert "4D + delayed ACK (40-44 ms at HZ=250)" in " ".join(text.split())
    assert "84.000 ms" in text
    short = render_ladder(sim, explanations=False)
    assert len(short.splitlines()) < len(render_ladder(sim).splitlines())
