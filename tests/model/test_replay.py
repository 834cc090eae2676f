"""The replayed Fast Open SYN (replay.py): what each kernel does, at D = 10 and at D = 0."""

from __future__ import annotations

import pytest

from tests.model.scenarios import scenario
from tfolab.model import AppCall, Note, Segment, simulate, simulation
from tfolab.model.loop import ReplayOrder
from tfolab.model.scenario import ScenarioConfig, SettingError
from tfolab.model.simulation import ModelInputError


def replay(delay: float, *, order: ReplayOrder = "chain-first"):  # type: ignore[no-untyped-def]
    item = scenario("fastopen", "replay")
    return simulate(item.config, one_way_delay_ms=delay, iterations=2, replay_order=order)


def segments(sim, iteration: int) -> list[tuple[int, str, tuple[str, ...], int, int | None, int]]:  # type: ignore[no-untyped-def]
    return [
        (e.connection, e.sender, e.flags, e.seq, e.ack, e.length)
        for e in sim.events
        if isinstance(e, Segment) and e.iteration == iteration
    ]


@pytest.mark.parametrize("delay", [0, 10])
def test_the_server_application_receives_the_request_twice(delay: float) -> None:
    sim = replay(delay)
    assert sim.app == {"accepted": 2, "requests": 2}
    assert sim.counters == {"TCPFastOpenActive": 1, "TCPFastOpenPassive": 2}
    reads = [e for e in sim.events if isinstance(e, AppCall) and e.side == "server"
             and e.call == "read" and e.iteration >= 1 and "16 B" in e.detail]  # fmt: skip
    assert [e.iteration for e in reads] == [1, 2]
    # the replay is timed from its send to the response reaching the client's host: 2D
    assert [p.predicted_ms for p in sim.predictions] == [2 * delay, 2 * delay]
    assert sim.predictions[1].explanation.startswith("2D: replayed SYN+data, response")


def test_at_10_ms_the_time_wait_socket_acks_and_is_assassinated() -> None:
    sim = replay(10)
    # connection 2 is iteration 1 (1 is the warm-up), 3 the replay
    assert segments(sim, 2) == [
        (3, "client", ("SYN",), 0, None, 16),  # the same bytes again
        (3, "server", ("SYN", "ACK"), 0, 17, 0),  # a new child acks the data
        (3, "server", ("ACK", "PSH"), 1, 17, 16),  # ... and the application answers
        (2, "client", ("ACK",), 18, 18, 0),  # TIME_WAIT: its own old numbers
        (2, "client", ("ACK",), 18, 18, 0),  # data is never rate-limited
        (2, "server", ("RST",), 18, None, 0),  # tcp_v4_send_reset: seq = that ack
        (2, "server", ("RST",), 18, None, 0),
    ]
    notes = [e.text for e in sim.events if isinstance(e, Note) and e.iteration == 2]
    assert any("TIME_WAIT assassination" in text for text in notes)
    assert any("about 1 s after its SYN-ACK" in text for text in notes)


def test_at_0_ms_the_kernel_finishes_before_the_application_answers() -> None:
    sim = replay(0)
    assert segments(sim, 2) == [
        (3, "client", ("SYN",), 0, None, 16),
        (3, "server", ("SYN", "ACK"), 0, 17, 0),
        (2, "client", ("ACK",), 18, 18, 0),
        (2, "server", ("RST",), 18, None, 0),
        (3, "server", ("ACK", "PSH"), 1, 17, 16),
        (3, "client", ("RST",), 17, None, 0),  # no socket left: tcp_v4_send_reset
    ]
    notes = [e.text for e in sim.events if isinstance(e, Note) and e.iteration == 2]
    assert any("tcp_reset closes the server's socket" in text for text in notes)


def test_at_0_ms_the_application_may_answer_before_the_chain_ends_time_wait() -> None:
    """The other outcome of that race (captured on 6.1, 4 runs of 12): the replayed child's
    application answers on the other CPU between the SYN-ACK and the RST, so TIME_WAIT answers
    the response too, the server's host resets both answers, and the client's host, its
    TIME_WAIT gone only after the response, sends no reset."""
    sim = replay(0, order="app-first")
    assert segments(sim, 2) == [
        (3, "client", ("SYN",), 0, None, 16),
        (3, "server", ("SYN", "ACK"), 0, 17, 0),
        (2, "client", ("ACK",), 18, 18, 0),
        (3, "server", ("ACK", "PSH"), 1, 17, 16),
        (2, "server", ("RST",), 18, None, 0),
        (2, "client", ("ACK",), 18, 18, 0),
        (2, "server", ("RST",), 18, None, 0),
    ]
    assert sim.app == {"accepted": 2, "requests": 2}
    others = simulation.other_replay_orders(sim)
    assert [o.replay_order for o in others] == ["chain-first", "app-holds"]
    assert simulation.other_replay_orders(replay(10)) == ()  # with a delay, no race


def test_at_0_ms_the_answers_send_may_hold_the_child_while_time_wait_acks_both() -> None:
    """The third outcome (captured on 6.1 in CI's VM, 1 run of 6): the application answers
    before TIME_WAIT has had the SYN-ACK, and the answer's send() runs loopback's softirq
    while it holds the child (tcp_sendmsg). TIME_WAIT acks the SYN-ACK and the answer; the
    two ACKs, the same numbers and timestamps, wait in the child's backlog, where
    tcp_add_backlog merges the second into the first: release_sock resets once."""
    sim = replay(0, order="app-holds")
    assert segments(sim, 2) == [
        (3, "client", ("SYN",), 0, None, 16),
        (3, "server", ("SYN", "ACK"), 0, 17, 0),
        (3, "server", ("ACK", "PSH"), 1, 17, 16),
        (2, "client", ("ACK",), 18, 18, 0),  # the SYN-ACK's, sent only now
        (2, "client", ("ACK",), 18, 18, 0),  # the answer's
        (2, "server", ("RST",), 18, None, 0),  # one: the second ACK merged into the first
    ]
    notes = [e.text for e in sim.events if isinstance(e, Note) and e.iteration == 2]
    assert any("merged into the backlog's last skb" in text for text in notes)
    assert any("TIME_WAIT assassination" in text for text in notes)
    assert sim.app == {"accepted": 2, "requests": 2}


def test_replay_needs_what_makes_the_server_accept_the_data() -> None:
    item = scenario("fastopen", "replay")
    with pytest.raises(SettingError) as err:
        ScenarioConfig(**{**item.config.__dict__, "cookie_cache": "flush"}).check()
    assert err.value.key == "cookie_cache"
    with pytest.raises(ModelInputError, match="at least 2 iterations"):
        simulate(item.config, one_way_delay_ms=10, iterations=1)
