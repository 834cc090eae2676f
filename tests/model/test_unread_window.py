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


def test_before_6_5_the_syn_data_skb_is_linear_and_charges_its_kmalloc_head() -> None:
    """tcp_send_syn_data copied the SYN's data into the skb's head until "tcp: let
    tcp_send_syn_data() build headless packets" (6.5): 1420 bytes take a 4 KiB head.
    Captured on 6.1 (CI's VM, large-data with fastopen_sysctl=621, so the server
    refuses the SYN's data and the client resends that skb): the ACK of 1421 carried
    498, the right-edge bound, in 6 runs of 6; a 1420 + 1280-byte charge gives 501."""
    from tfolab.model.rcv_space import linear_truesize

    assert linear_truesize(16) == 1280  # a 1 KiB head: the small skb every 6.1 data skb has
    assert linear_truesize(1420) == 4352
    config = dataclasses.replace(
        scenario("fastopen", "large-data").config, cookie_cache="warm", fastopen_sysctl=621
    )
    acks = {
        True: _first_data_ack(config, LINUX_6_1),
        False: _first_data_ack(config, receive_memory_for((6, 18), 131072, 6291456)),
    }
    assert acks[True] == (1421, 498)
    assert acks[False][0] == 1421 and acks[False][1] != 498


def _first_data_ack(config, memory) -> tuple[int | None, int | None]:
    sim = simulate(config, one_way_delay_ms=0, iterations=1, receive_memory=memory)
    first = next(
        e for e in sim.events
        if isinstance(e, Segment) and e.connection == 2 and e.sender == "server"
        and e.flags == ("ACK",)
    )  # fmt: skip
    return first.ack, first.window
