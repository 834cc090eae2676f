"""A reader that takes its socket while its peer still sends (model/backlog.py, loop.py).

Captured on Linux 6.18 at D = 0 (no delayer), delack nodelay with a 36086-byte
first write (32741 + 3345 bytes) and a 6-byte second write, one round, 32 MiB
tcp_rmem[2] (window scale 10). Of six runs: the server read after all three
segments (the model's default: ack 36093, window 93) once; after the first,
with 3345 and 6 bytes in its backlog (one ack 36093, window 116) twice; after
the second, between the client's two writes (ack 36087, then ack 36093) three
times; and in another run the client read the first 32768 bytes of the echo
before its last 3324 arrived (window 117 on its last three segments).
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.model.scenarios import scenario
from tfolab.model import Segment, Simulation, simulate
from tfolab.model.loop import ReaderChoice
from tfolab.model.rcv_space import RcvSpace, ReceiveMemory
from tfolab.model.scenario import ScenarioConfig
from tfolab.model.simulation import with_lock_early

ACKED = (8949, 17897, 20001)  # the echo's ACKs (and the FIN, which carries 20001)
HOST_RMEM = ReceiveMemory(rmem_max=33_554_432)  # 6.18's default tcp_rmem[2], as measured
CONFIG = dataclasses.replace(scenario("delack", "nodelay").config, first_write_bytes=36086)


def _sim(
    lock_early: frozenset[ReaderChoice] = frozenset(),
    memory: ReceiveMemory = HOST_RMEM,
    delay: float = 0,
    config: ScenarioConfig = CONFIG,
    iterations: int = 1,
) -> Simulation:
    return simulate(
        config,
        one_way_delay_ms=delay,
        iterations=iterations,
        receive_space_bytes=memory.rmem_max,
        receive_memory=memory,
        lock_early=lock_early,
    )


def _segments(
    sim: Simulation, sender: str
) -> list[tuple[tuple[str, ...], int | None, int, int | None]]:
    return [
        (e.flags, e.ack, e.length, e.window)
        for e in sim.events
        if isinstance(e, Segment) and e.sender == sender and "SYN" not in e.flags
    ]


def _pure_acks(sim: Simulation, sender: str) -> list[tuple[int | None, int | None]]:
    return [(ack, window) for flags, ack, length, window in _segments(sim, sender)
            if flags == ("ACK",) and not length]  # fmt: skip


def test_the_lock_points_are_every_data_segment_a_reader_gets_at_d0() -> None:
    """And, of another kind, where the first write may overtake the handshake's ACK."""
    sim = _sim()
    assert [p.key for p in sim.lock_points] == [
        (1, "server", 1, "overtaken"),
        (1, "server", 32742, "take"),
        (1, "server", 36087, "take"),
        (1, "server", 36093, "take"),
        (1, "client", 32769, "take"),
        (1, "client", 36093, "take"),
    ]


def test_with_a_delay_the_lock_points_are_where_more_arrives_at_once() -> None:
    """With a delay a reader races only what arrives with the segment that woke it (the
    delayer keeps the microseconds between them): accept()'s hold at the handshake ACK
    the first write arrives with (end 1), the first two segments of that write, and the
    echo's first GSO packet; never the last of what arrives together."""
    assert [p.key for p in _sim(delay=10).lock_points] == [
        (1, "server", 1, "take"),
        (1, "server", 32742, "take"),
        (1, "server", 36087, "take"),
        (1, "client", 32769, "take"),
    ]


def test_by_default_the_reader_runs_after_its_peer_is_done() -> None:
    assert _pure_acks(_sim(), "server") == [(32742, 93), (36093, 93)]
    assert {w for *_, w in _segments(_sim(), "client")} == {64, 93}


def test_a_reader_after_the_first_segment_grows_the_window_with_the_backlog_counted() -> None:
    """3345 and 6 bytes wait in the backlog while the server copies 32741 bytes; the
    3345 bytes are then processed with sk_backlog.len (5143) still charged, and
    tcp_grow_window raises rcv_ssthresh to tcp_space(): (131072 - 5143 - 4241) x
    249/256 = 118362, so the window is 116 (x 1024); its quick ACK and the 6 bytes'
    are deferred to tcp_release_cb (6.7+): one ack 36093."""
    sim = _sim(frozenset({(1, "server", 32742, "take")}))
    assert _pure_acks(sim, "server") == [(32742, 93), (36093, 116)]
    deferred = [
        e
        for e in sim.events
        if isinstance(e, Segment) and "sent by tcp_release_cb" in e.explanation
    ]
    assert len(deferred) == 1 and deferred[0].ack == 36093
    assert {w for *_, w in _segments(sim, "server")[1:]} == {116}


def test_before_6_7_each_ack_from_the_backlog_leaves_at_once() -> None:
    """Without TCP_ACK_DEFERRED the 3345 bytes' quick ACK leaves while the backlog is
    processed (window 116 already), and the read of the rest ACKs the 6 bytes."""
    memory = dataclasses.replace(HOST_RMEM, backlog_ack_defer=False)
    sim = _sim(frozenset({(1, "server", 32742, "take")}), memory)
    assert _pure_acks(sim, "server") == [(32742, 93), (36087, 116), (36093, 116)]


def test_a_recv_between_the_two_writes_acks_what_it_read() -> None:
    """The server's MSG_DONTWAIT recv() copied 36086 bytes before the 6-byte write
    arrived: tcp_cleanup_rbuf ACKs them (a small pushed segment, not interactive),
    and the recv() of the last 6 bytes ACKs those."""
    sim = _sim(frozenset({(1, "server", 36087, "take")}))
    assert _pure_acks(sim, "server") == [(32742, 93), (36087, 93), (36093, 93)]


def test_a_blocking_read_flushes_the_backlog_before_it_acks() -> None:
    """The client's read() copied 32768 bytes of the echo while the last 3324 waited:
    tcp_space() with both the backlog (4220) and the queued 3324 (4220) charged gives
    rcv_ssthresh 119279, so its last segments offer 117."""
    sim = _sim(frozenset({(1, "client", 32769, "take")}))
    assert _segments(sim, "client")[-3:] == [
        (("ACK",), 36093, 0, 117),
        (("FIN", "ACK"), 36093, 0, 117),
        (("ACK",), 36094, 0, 117),
    ]


def test_a_lock_point_keeps_its_name_whatever_else_was_taken() -> None:
    """Both races at once, as one run showed them (the server between the writes,
    the client within the echo): each point names the same segment either way."""
    both = _sim(frozenset({(1, "server", 36087, "take"), (1, "client", 32769, "take")}))
    assert _pure_acks(both, "server") == [(32742, 93), (36087, 93), (36093, 93)]
    assert _segments(both, "client")[-1] == (("ACK",), 36094, 0, 117)
    assert with_lock_early(_sim(), both.lock_early).events == both.events


@pytest.mark.parametrize("backlog", [0, 5143])
def test_tcp_space_subtracts_the_backlog(backlog: int) -> None:
    space = RcvSpace(HOST_RMEM, 10, 65483)
    space.ratio, space.rmem, space.backlog = 249, 4241, backlog
    assert space.space() == ((131_072 - backlog - 4241) * 249) >> 8


def _echo_windows(lock_early: frozenset[ReaderChoice]) -> list[int | None]:
    """The client's pure ACKs of a 20000-byte echo at MTU 9000 (8948 + 8948 + 2104 B,
    cut in software: fresh skbs), 832 bytes of skb per segment as the runner measured."""
    memory = dataclasses.replace(HOST_RMEM, skb_head_truesize=832)
    config = dataclasses.replace(
        scenario("handshake", "plain").config, request_bytes=20000, mtu=9000
    )
    sim = _sim(lock_early, memory, config=config)
    return [w for _, ack, length, w in _segments(sim, "client") if not length and ack in ACKED]


def test_fresh_skbs_merge_in_the_backlog_unless_its_list_was_already_taken() -> None:
    """The client's read() took the socket after the first 8948 bytes. Merged in the
    backlog (tcp_add_backlog: the tail is no clone), the other two charge 8948 + 832 +
    2104 to sk_backlog.len: window 96. Captured on 6.18 in 1 run of 4: 97, when
    __release_sock had already taken the list as the last 2104 bytes came, which then
    waited apart (+ 832) and left more room to tcp_grow_window."""
    take = (1, "client", 8949, "take")
    assert _echo_windows(frozenset({take})) == [80, 96, 96]
    detached = frozenset({take, (1, "client", 20001, "detach")})
    assert _echo_windows(detached) == [80, 97, 97]


def test_the_ack_a_reader_sends_while_it_holds_the_socket_puts_the_answer_in_its_backlog() -> None:
    """delack quickack (Nagle on; TCP_QUICKACK before every recv()), 10 then 1257 bytes,
    D = 0: the server's recv() of the 10 bytes ACKs them from inside the call
    (tcp_cleanup_rbuf, after TCP_QUICKACK left pingpong), the client's Nagle releases
    the 1257 bytes within that ACK's softirq, and they wait in the server's backlog.
    Processed there, their tcp_grow_window sees tcp_space() with sk_backlog.len
    charged and stops at (131072 - 2 x 2089) x 154/256: window 75 in every round,
    as captured on 6.18 in 11 runs of 30 (76 in the others)."""
    memory = dataclasses.replace(HOST_RMEM, skb_head_truesize=832)
    config = dataclasses.replace(scenario("delack", "quickack").config, second_write_bytes=1257)

    def windows(lock_early: frozenset[ReaderChoice]) -> set[int | None]:
        sim = _sim(lock_early, memory, config=config, iterations=3)
        return {w for flags, ack, _, w in _segments(sim, "server") if ack and ack > 11}

    assert windows(frozenset()) == {76}
    every_round = frozenset((1, "server", end, "take") for end in (11, 1278, 2545))
    assert windows(every_round) == {75}
