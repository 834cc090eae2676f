"""read_whole: a client that reads each answer whole (SO_RCVLOWAT, then poll()).

The rules (model/sock.py, delack.py, burst.py, loop.py, domain.py):
- the client sets SO_RCVLOWAT to the answer's size before connect(), and again
  before each answer's read (the warm-up reads as it always does);
- tcp_epollin_ready wakes it only at the mark, or with at most one rcv_mss of
  window left, or near sk_rcvbuf, or at a FIN: no lock point and no racing ACK
  before that segment;
- __tcp_ack_snd_check ACKs more than one full frame at once while the unread
  bytes are below the mark, whether or not the window's right edge advances
  (6.1 and 6.18; it shows on 6.1, whose window is half the free memory);
- no answer the domain allows is over half the receive buffer, where
  tcp_set_rcvlowat would raise sk_rcvbuf and the window clamp.
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.model.scenarios import scenario
from tfolab.model import ModelInputError, Segment, Simulation, simulate
from tfolab.model.domain import first_window
from tfolab.model.events import AppCall
from tfolab.model.rcv_space import ReceiveMemory, receive_memory_for
from tfolab.model.scenario import ScenarioConfig
from tfolab.model.window import initial_wscale

LINUX_6_1 = receive_memory_for((6, 1), 131_072, 6_291_456)
LINUX_6_18 = receive_memory_for((6, 18), 131_072, 33_554_432)


def _sim(
    config: ScenarioConfig, memory: ReceiveMemory, delay: float = 10.0, iterations: int = 3
) -> Simulation:
    return simulate(
        config,
        one_way_delay_ms=delay,
        iterations=iterations,
        receive_space_bytes=memory.rmem_max,
        receive_memory=memory,
        hz=250,
    )


def _client_acks(sim: Simulation, iteration: int) -> list[tuple[int | None, int | None]]:
    return [
        (e.ack, e.window)
        for e in sim.events
        if isinstance(e, Segment) and e.sender == "client" and e.iteration == iteration
        and not e.length and "SYN" not in e.flags and "FIN" not in e.flags
    ]  # fmt: skip


def _kept(read_whole: bool) -> ScenarioConfig:
    """Three rounds on one connection, each answered with three full segments."""
    config = scenario("delack", "nodelay").config
    return dataclasses.replace(config, response_bytes=4344, mtu=1500, read_whole=read_whole)


def test_on_6_1_the_mark_acks_the_second_segment_at_once() -> None:
    """Round 2 on 6.1: two unread segments pull the window below the one advertised,
    so a streaming reader's ACK waits for its read (__tcp_cleanup_rbuf: ack 8689 after
    the three); below the whole-answer mark it goes at once (ack 7241)."""
    assert _client_acks(_sim(_kept(False), LINUX_6_1), 2) == [(8689, 501)]
    assert _client_acks(_sim(_kept(True), LINUX_6_1), 2) == [(7241, 496)]


def test_on_6_18_the_window_advances_anyway() -> None:
    """6.18 converts memory to window by the measured ratio: the right edge advances, so
    the second segment is ACKed at once with or without the mark."""
    assert _client_acks(_sim(_kept(True), LINUX_6_18), 2) == _client_acks(
        _sim(_kept(False), LINUX_6_18), 2
    )


def _reads(sim: Simulation) -> list[str]:
    return [e.detail for e in sim.events if isinstance(e, AppCall) and e.side == "client"
            and e.call == "read"]  # fmt: skip


def test_the_answer_is_read_once_and_no_lock_point_comes_before_the_mark() -> None:
    """At D = 0 a streaming client may take its socket at the answer's first GSO packet
    (a lock point); a whole-answer reader is not woken there."""
    config = dataclasses.replace(
        scenario("delack", "nodelay").config, first_write_bytes=36086, mtu=65536
    )
    streaming = _sim(config, LINUX_6_18, delay=0, iterations=1)
    whole = _sim(dataclasses.replace(config, read_whole=True), LINUX_6_18, delay=0, iterations=1)
    takes = [p.key for p in streaming.lock_points if p.key[1] == "client"]
    assert takes == [(1, "client", 32769, "take"), (1, "client", 36093, "take")]
    assert [p.key for p in whole.lock_points if p.key[1] == "client"] == [
        (1, "client", 36093, "take")
    ]
    assert _reads(whole) == ["36092 B, first response byte, response complete"]


def test_the_mark_is_set_before_connect() -> None:
    sim = _sim(_kept(True), LINUX_6_18, iterations=1)
    calls = [(e.call, e.detail) for e in sim.events if isinstance(e, AppCall)
             and e.side == "client"]  # fmt: skip
    assert calls[:2] == [("setsockopt", "SO_RCVLOWAT 4344"), ("connect", "blocking")]


@pytest.mark.parametrize("memory", [LINUX_6_1, LINUX_6_18], ids=["6.1", "6.18"])
def test_every_answer_the_domain_allows_keeps_the_mark_within_half_the_buffer(
    memory: ReceiveMemory,
) -> None:
    """tcp_set_rcvlowat raises sk_rcvbuf above twice the mark; the first-window rule keeps
    answers below that (domain.py), so the model's buffer stays the kernel's default."""
    wscale = initial_wscale(memory.rmem_max)
    for mtu in range(128, 65537, 61):
        assert 2 * first_window(mtu, memory, wscale) <= memory.rmem_default, mtu
    window = first_window(65536, memory, wscale)
    config = dataclasses.replace(
        scenario("handshake", "plain").config, response_bytes=window, read_whole=True
    )
    _sim(config, memory, iterations=1)  # the largest answer: inside, no assertion trips
    with pytest.raises(ModelInputError, match="first window"):
        _sim(dataclasses.replace(config, response_bytes=window + 1), memory, iterations=1)
