"""domain.py's bounds for answers read whole beyond the initial window (the window model)."""

from __future__ import annotations

import dataclasses

import pytest

from tests.model.scenarios import scenario
from tfolab.model import domain
from tfolab.model.domain import (
    MAX_WHOLE_ANSWER_SEGMENTS,
    MIN_WHOLE_ANSWER_DELAY_MS,
    WHOLE_ANSWER_MTUS,
    mss_in_use,
)
from tfolab.model.rcv_space import LINUX_DEFAULT, receive_memory_for
from tfolab.model.scenario import ScenarioConfig

WSCALE = 10
LINUX_6_1 = receive_memory_for((6, 1), 131072, 6291456)


def _answer(size: int, mtu: int = 1500, **changes: object) -> ScenarioConfig:
    base = scenario("handshake", "plain").config
    return dataclasses.replace(
        base,
        response_bytes=size,
        mtu=mtu,
        read_whole=True,
        **changes,  # type: ignore[arg-type]
    )


def test_an_answer_read_whole_takes_slow_start_inside_the_domain() -> None:
    assert domain.refusal(_answer(1_000_000), 10, LINUX_DEFAULT, WSCALE) is None
    assert domain.refusal(_answer(100_000, mtu=128), 75, LINUX_DEFAULT, WSCALE) is None


def test_without_read_whole_the_initial_window_is_still_the_limit() -> None:
    streaming = dataclasses.replace(_answer(100_000), read_whole=False)
    assert "initial congestion window" in (
        domain.refusal(streaming, 10, LINUX_DEFAULT, WSCALE) or ""
    )


@pytest.mark.parametrize("mtu", [WHOLE_ANSWER_MTUS[0] - 1, WHOLE_ANSWER_MTUS[1] + 1, 65536])
def test_mtus_outside_the_measured_range_are_refused(mtu: int) -> None:
    size = 20 * mss_in_use(mtu)
    assert domain.refusal(_answer(size, mtu=mtu), 10, LINUX_DEFAULT, WSCALE) is not None


def test_more_segments_than_measured_are_refused() -> None:
    mss = mss_in_use(576)
    inside = _answer(MAX_WHOLE_ANSWER_SEGMENTS * mss, mtu=576)
    assert domain.refusal(inside, 10, LINUX_DEFAULT, WSCALE) is None
    why = domain.refusal(_answer(inside.response_bytes + 1, mtu=576), 10, LINUX_DEFAULT, WSCALE)
    assert why is not None and "host's own packet rate" in why


def test_a_short_delay_is_refused() -> None:
    edge = MIN_WHOLE_ANSWER_DELAY_MS
    assert domain.refusal(_answer(100_000), edge, LINUX_DEFAULT, WSCALE) is None
    why = domain.refusal(_answer(100_000), edge - 0.5, LINUX_DEFAULT, WSCALE)
    assert why is not None and "tcp_tso_should_defer" in why


def test_a_kept_connection_answers_once() -> None:
    kept = _answer(100_000, fresh_connection_each_iteration=False)
    assert domain.refusal(kept, 10, LINUX_DEFAULT, WSCALE, 1) is None
    assert "one round per connection" in (domain.refusal(kept, 10, LINUX_DEFAULT, WSCALE, 2) or "")


def test_before_6_6_a_fast_open_client_cannot_set_its_mark_before_the_syn() -> None:
    fast = _answer(100_000, client_fastopen="sendto")
    assert domain.refusal(fast, 10, LINUX_DEFAULT, WSCALE) is None
    assert "window clamp" in (domain.refusal(fast, 10, LINUX_6_1, 7) or "")
    assert domain.refusal(_answer(100_000), 10, LINUX_6_1, 7) is None
