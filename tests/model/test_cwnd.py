"""The congestion window's two effects inside the domain, and where the domain ends.

tcp_cwnd_test (6.1 and 6.18) gives one GSO skb at most half of cwnd and what
cwnd has left; a flight of more than half of it lets slow start grow cwnd
(tcp_is_cwnd_limited), and the model, which keeps cwnd at TCP_INIT_CWND,
refuses a scenario whose later multi-segment send would depend on the growth.
Captured on 6.18: a 690-byte write at MTU 128, D = 0, leaves as 5 + 5 segments
with PSH on seq 305 and seq 685, in both directions.
"""

from __future__ import annotations

import pytest

from tfolab.model import ModelInputError, Segment, simulate
from tfolab.model.pacing import cwnd_quota
from tfolab.model.scenario import ScenarioConfig


def test_cwnd_quota_is_half_the_window_and_what_is_left() -> None:
    assert cwnd_quota(0) == 5
    assert cwnd_quota(5) == 5
    assert cwnd_quota(7) == 3
    assert cwnd_quota(10) == 0
    assert cwnd_quota(0, cwnd=1) == 1
    assert cwnd_quota(0, cwnd=3) == 1


def _single_write(first_write_bytes: int, mtu: int, iterations: int = 1) -> ScenarioConfig:
    return ScenarioConfig(
        pattern="wwr",
        fresh_connection_each_iteration=False,
        mtu=mtu,
        single_write=True,
        first_write_bytes=first_write_bytes,
    )


def test_a_nine_and_a_half_segment_write_leaves_as_two_packets_of_five() -> None:
    sim = simulate(_single_write(684, 128), one_way_delay_ms=0, iterations=1)
    for sender in ("client", "server"):
        data = [
            e for e in sim.events
            if isinstance(e, Segment) and e.sender == sender and e.length
        ]  # fmt: skip
        assert [(s.seq, s.length, "PSH" in s.flags) for s in data] == [
            (1, 76, False), (77, 76, False), (153, 76, False), (229, 76, False),
            (305, 76, True),
            (381, 76, False), (457, 76, False), (533, 76, False), (609, 76, False),
            (685, 6, True),
        ]  # fmt: skip
    cut = next(e for e in sim.events if isinstance(e, Segment) and e.seq == 305)
    assert "tcp_cwnd_test" in cut.explanation


def test_five_segments_or_fewer_keep_cwnd_and_a_kept_connection_is_predicted() -> None:
    sim = simulate(_single_write(5 * 1448 - 6, 1500), one_way_delay_ms=3, iterations=3)
    assert len(sim.predictions) == 3


def test_a_later_send_after_slow_start_grew_cwnd_is_refused_with_the_reason() -> None:
    with pytest.raises(ModelInputError) as refused:
        simulate(_single_write(9000, 1500), one_way_delay_ms=3, iterations=3)
    message = str(refused.value)
    assert message.startswith("outside the model's domain:")
    assert "flight of 7 segments" in message
    assert "tcp_is_cwnd_limited" in message
