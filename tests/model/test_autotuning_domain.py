"""Receive-buffer autotuning is outside the model: a kept connection stays below it.

tcp_rcv_space_adjust (6.1 and 6.18) grows a receiver's buffer and windows once
it copies more than rcvq_space.space (min3(rcv_ssthresh, rcv_wnd, 10 x advmss),
tcp_init_buffer_space) within one measurement. Measured on 6.18: at D = 0,
5 rounds of 36092 bytes took the server's window from 93 to 221 and 349; at
D = 10 ms, 5 rounds of 30006 bytes from 96 to 224 in one run of two. Both are
refused with the reason; what stays within the bound is simulated.
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.model.scenarios import scenario
from tfolab.model import ModelInputError, domain, simulate
from tfolab.model.rcv_space import LINUX_DEFAULT
from tfolab.model.window import DEFAULT_RECEIVE_SPACE, initial_wscale

NODELAY = scenario("delack", "nodelay").config
WSCALE = initial_wscale(DEFAULT_RECEIVE_SPACE)


@pytest.mark.parametrize(
    ("mtu", "space"),
    [(65536, 65483), (9000, 62636), (1500, 14480), (576, 5240)],
)
def test_the_bound_is_the_first_window_or_ten_segments(mtu: int, space: int) -> None:
    assert domain.autotuning_space(mtu, LINUX_DEFAULT, WSCALE) == space


@pytest.mark.parametrize("delay", [0, 10])
def test_rounds_past_the_bound_are_refused_with_the_reason(delay: float) -> None:
    config = dataclasses.replace(NODELAY, first_write_bytes=36086)
    simulate(config, one_way_delay_ms=delay, iterations=1)
    with pytest.raises(ModelInputError) as refused:
        simulate(config, one_way_delay_ms=delay, iterations=2)
    assert "tcp_rcv_space_adjust" in str(refused.value)
    assert "72184 bytes, more than the 65483" in str(refused.value)


def test_fresh_connections_never_add_up() -> None:
    """Each rr connection carries one request and one response, at most the bound."""
    config = dataclasses.replace(scenario("fastopen", "plain").config, request_bytes=30000)
    assert domain.refusal(config, 0, LINUX_DEFAULT, WSCALE, 50) is None
    kept = dataclasses.replace(config, fresh_connection_each_iteration=False)
    assert domain.refusal(kept, 0, LINUX_DEFAULT, WSCALE, 3) is not None
