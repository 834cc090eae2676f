"""The SYN's window scale follows tcp_select_initial_window: ilog2(space) - 15."""

from __future__ import annotations

import pytest

from tests.model.scenarios import scenario
from tfolab.model import Segment, simulate
from tfolab.model.options import WindowScale
from tfolab.model.window import initial_wscale


@pytest.mark.parametrize(
    ("space", "wscale"),
    [(6_291_456, 7), (4_194_304, 7), (33_554_432, 10), (65_535, 0), (1 << 40, 14)],
)
def test_the_scale_is_chosen_for_the_largest_window(space: int, wscale: int) -> None:
    assert initial_wscale(space) == wscale


def test_both_syns_announce_the_kernels_scale() -> None:
    item = scenario("handshake", "plain")
    sim = simulate(item.config, one_way_delay_ms=1, iterations=1, receive_space_bytes=33_554_432)
    syns = [e for e in sim.events if isinstance(e, Segment) and "SYN" in e.flags]
    assert syns and all(WindowScale(10) in s.options for s in syns)
