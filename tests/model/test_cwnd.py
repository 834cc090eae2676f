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

from tfolab.model import ModelInputError, Segment, domain, simulate
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
    """Two rounds: within the 14480 bytes a receiver copies before receive-buffer
    autotuning may grow its windows (domain.py; three rounds are refused for that)."""
    sim = simulate(_single_write(5 * 1448 - 6, 1500), one_way_delay_ms=3, iterations=2)
    assert len(sim.predictions) == 2


def test_a_later_send_after_slow_start_grew_cwnd_is_refused_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two rounds of more than five segments are past the 10 x MSS that receive-buffer
    autotuning allows (domain.py), so that refusal comes first; without it the cwnd
    growth is found while the model runs."""
    with pytest.raises(ModelInputError, match="tcp_rcv_space_adjust"):
        simulate(_single_write(9000, 1500), one_way_delay_ms=3, iterations=3)
    monkeypatch.setattr(domain, "autotuning_space", lambda *_: 1 << 30)
    with pytest.raises(ModelInputError) as refused:
        simulate(_single_write(9000, 1500), one_way_delay_ms=3, iterations=3)
    message = str(refused.value)
    assert message.startswith("outside the model's domain:")
    assert "flight of 7 segments" in message
    assert "tcp_is_cwnd_limited" in message


def _client_data(config: ScenarioConfig, delay_ms: float) -> list[Segment]:
    sim = simulate(config, one_way_delay_ms=delay_ms, iterations=1)
    return [e for e in sim.events if isinstance(e, Segment) and e.sender == "client" and e.length]


def test_sendmsg_cuts_a_write_into_skbs_of_half_the_peer_window() -> None:
    """tcp_xmit_size_goal (6.1, 6.18): 3 x 8948 B per skb at MTU 9000 (half of 62636 is
    31318), so 40000 B leave as a 3-segment and a 2-segment packet, PSH on each last
    (captured at D = 0 on 6.18: PSH on seq 17897 and 35793)."""
    data = _client_data(ScenarioConfig(mtu=9000, request_bytes=40000), 0)
    assert [(s.seq, s.length, "PSH" in s.flags, s.starts_skb) for s in data] == [
        (1, 8948, False, True), (8949, 8948, False, False), (17897, 8948, True, False),
        (26845, 8948, False, True), (35793, 4208, True, False),
    ]  # fmt: skip


def test_forced_push_marks_the_skb_past_half_the_window_and_each_skb_counts() -> None:
    """65483 B at lo's MTU: skbs of 32741 B (the MSS is half the SYN-ACK's 65483);
    the second fills past pushed_seq + 32741, so forced_push marks it PSH."""
    config = ScenarioConfig(request_bytes=65483)
    data = _client_data(config, 5)
    assert [(s.seq, s.length, "PSH" in s.flags) for s in data] == [
        (1, 32741, False), (32742, 32741, True), (65483, 1, True),
    ]  # fmt: skip
    assert "forced_push" in data[1].explanation
    starts = [s.starts_skb for s in data]
    assert starts == [True, True, True]  # three packets at once
