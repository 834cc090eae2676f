"""The delays where a timer the model does not follow would fire in a run are refused.

The handshake's limit, for a Fast Open client only: a round trip 2D must end before
the SYN's 1 s timer (a Fast Open SYN sent again is not modelled yet). The replay's: its
child is never answered (the client's side is TIME_WAIT), so
its SYN-ACK is sent again 1 s later at any delay, arriving 2D + 1 s after the replay;
the run captures until 4D + CAPTURE_TAIL_MS, so from D = 467.5 ms the capture holds it
(seen on 6.18 at D = 497: the SYN-ACK again, 1016 ms after the first, fuzzer seed 5111).
"""

from __future__ import annotations

import pytest

from tests.model.scenarios import scenario
from tfolab.model import ModelInputError, domain, simulate
from tfolab.model.rcv_space import LINUX_DEFAULT
from tfolab.model.window import DEFAULT_RECEIVE_SPACE, initial_wscale

WSCALE = initial_wscale(DEFAULT_RECEIVE_SPACE)
REPLAY = scenario("fastopen", "replay").config
PLAIN = scenario("fastopen", "plain").config
COOKIE = scenario("fastopen", "cookie").config


def test_the_limits_follow_from_the_timer_the_tail_and_the_margin() -> None:
    assert domain.MAX_HANDSHAKE_DELAY_MS == (1000 - 5) / 2
    assert domain.MAX_REPLAY_DELAY_MS == (1000 - 60 - 5) / 2 == 467.5


def test_a_replay_is_refused_where_its_childs_synack_timer_is_captured() -> None:
    assert domain.refusal(REPLAY, 467.5, LINUX_DEFAULT, WSCALE, 2) is None
    why = domain.refusal(REPLAY, 467.6, LINUX_DEFAULT, WSCALE, 2)
    assert why is not None
    assert "tcp_fastopen_synack_timer" in why and "needs the retransmission-timer model" in why
    with pytest.raises(ModelInputError, match="TIME_WAIT"):
        simulate(REPLAY, one_way_delay_ms=497, iterations=2)


def test_a_fast_open_client_keeps_the_handshake_limit() -> None:
    assert domain.refusal(COOKIE, 497, LINUX_DEFAULT, WSCALE, 2) is None
    why = domain.refusal(COOKIE, 498, LINUX_DEFAULT, WSCALE, 2) or ""
    assert "TCP_TIMEOUT_INIT" in why and "client_fastopen=off" in why


def test_without_fast_open_any_delay_is_followed() -> None:
    """The SYN and SYN-ACK timers are modelled (syn_timer.py, synack_timer.py)."""
    for delay in (497, 498, 600, 1000):
        assert domain.refusal(PLAIN, delay, LINUX_DEFAULT, WSCALE, 2) is None
