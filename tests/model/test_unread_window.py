"""delack_timer.unread_windows: at D = 0 a segment may be processed before the read the
model ran at the same instant, and its ACK then carries the window with that data unread."""

from __future__ import annotations

import dataclasses

from tests.model.scenarios import scenario
from tfolab.model import Segment, simulate
from tfolab.model.rcv_space import receive_memory_for

LINUX_6_1 = receive_memory_for((6, 1), 131072, 6291456)


def _server_acks(delay_ms: float) -> list[tuple[int | None, int | None, tuple[int, ...]]]:
    config = dataclasses.replace(scenario("fastopen", "large-data").config, cookie_cache="warm")
    sim = simulate(config, one_way_delay_ms=delay_ms, iterations=1, receive_memory=LINUX_6_1)
    return [
        (e.ack, e.window, e.window_alternatives)
        for e in sim.events
        if isinstance(e, Segment) and e.connection == 2 and e.sender == "server"
    ]


def test_the_ack_after_the_syn_data_may_carry_the_window_before_the_read() -> None:
    """CI's 6.1 VM at D = 0: the ACK of 2869 carried 498, the right-edge bound with the
    SYN's 1420 B still queued; the model's own order (read first) gives 501."""
    acks = _server_acks(0)
    assert acks[1] == (2869, 501, (498,))


def test_the_next_ack_follows_the_right_edge_the_unread_outcome_left() -> None:
    """In other runs the ACK of 3001 carried 497: 2869 + 498 * 128 is the edge that ACK
    offered, and tcp_select_window keeps it; 500 (the read had run for the ACK of 2869
    but not for this one) cannot happen, as a read does not un-happen."""
    acks = _server_acks(0)
    assert acks[2] == (3001, 501, (497,))


def test_with_a_delay_the_read_is_long_done() -> None:
    assert all(alternatives == () for _, _, alternatives in _server_acks(10))
