"""The right edge of the receive window decides the ACK after two full segments.

__tcp_ack_snd_check ACKs more than one full frame at once only if
__tcp_select_window() >= rcv_wnd. Captured: Debian's 6.1 (tcp_adv_win_scale 1)
holds that ACK in `large-data` and ACKs 3001 at the read; 6.18 (scaling_ratio)
sends `ack 2897` at once. rcv_space.py computes both; these tests pin them.
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.model.scenarios import scenario
from tfolab.model import AppCall, Segment, simulate
from tfolab.model.rcv_space import RcvSpace, receive_memory_for
from tfolab.model.scenario import ScenarioConfig

MSS = 1448


def _after_two_full_segments(release: tuple[int, int]) -> RcvSpace:
    space = RcvSpace(receive_memory_for(release, 131_072, 6_291_456), wscale=7, advmss=1460)
    space.initial_window(peer_timestamps_seen=False)  # the client's SYN: 64240
    space.init_buffer_space()
    space.advertise(536, 0)  # the request left with the window of an empty queue
    rcv_mss = 536
    for _ in range(2):
        space.queue(MSS, rcv_mss)
        rcv_mss = MSS
    return space


def test_on_6_1_two_unread_segments_pull_the_right_edge_left() -> None:
    space = _after_two_full_segments((6, 1))
    # The SYN offered 64240; tcp_select_window never shrinks it: ALIGN(64240, 128),
    # the "win 502" (x 128) of the capture.
    assert space.rcv_wnd == 64_256
    assert space.select_window(MSS) == 63_488  # half of the free 126 KiB, aligned
    assert not space.right_edge_advances(MSS)


@pytest.mark.parametrize("release", [(6, 6), (6, 18)])
def test_with_scaling_ratio_the_right_edge_advances(release: tuple[int, int]) -> None:
    space = _after_two_full_segments(release)
    assert space.ratio > 128  # loopback's payload/truesize, measured on the first segment
    assert space.right_edge_advances(MSS)


def _client_acks(release: tuple[int, int]) -> list[Segment]:
    item = scenario("fastopen", "large-data")
    sim = simulate(
        item.config,
        one_way_delay_ms=10,
        iterations=1,
        receive_memory=receive_memory_for(release, 131_072, 6_291_456),
    )
    return [
        e
        for e in sim.events
        if isinstance(e, Segment) and e.sender == "client" and e.flags == ("ACK",)
        and e.length == 0 and e.connection == 1
    ]  # fmt: skip


def test_large_data_on_6_1_acks_the_whole_response_at_the_read() -> None:
    first = _client_acks((6, 1))[0]
    assert first.ack == 3001
    assert "__tcp_cleanup_rbuf" in first.explanation


def test_large_data_on_6_18_acks_two_full_segments_at_once() -> None:
    first = _client_acks((6, 18))[0]
    assert first.ack == 2897
    assert "ACK at once" in first.explanation


def test_a_burst_arriving_together_is_read_at_once() -> None:
    """The client's read after the 3-segment response gets all 3000 bytes."""
    item = scenario("fastopen", "large-data")
    sim = simulate(item.config, one_way_delay_ms=10, iterations=1)
    reads = [
        e for e in sim.events
        if type(e).__name__ == "AppCall" and e.side == "client" and e.call == "read"
        and e.connection == 1
    ]  # fmt: skip
    assert reads and reads[0].detail.startswith("3000 B")


def _server_acks(delay_ms: float) -> list[Segment]:
    item = scenario("fastopen", "large-data")
    sim = simulate(item.config, one_way_delay_ms=delay_ms, iterations=2)
    return [
        e for e in sim.events
        if isinstance(e, Segment) and e.sender == "server" and e.flags == ("ACK",)
        and e.length == 0
    ]  # fmt: skip


def test_at_d0_the_ack_behind_a_read_may_merge_in_the_backlog() -> None:
    """Captured at D=0: sometimes only `ack 3001` leaves, sometimes `ack 2869` first.

    The server application is reading the SYN's data when the rest arrives; the
    socket is owned, the segments wait in its backlog and tcp_add_backlog may
    coalesce them: one ACK for both. The model names the first ACK a race.
    """
    racing = [a for a in _server_acks(0) if a.race]
    assert 2869 in {a.ack for a in racing}
    assert all("tcp_add_backlog" in a.explanation for a in racing)
    assert all("TCP_ACK_DEFERRED" in a.explanation for a in racing)


def test_a_burst_of_three_races_the_reader_it_wakes_at_any_delay() -> None:
    """Captured at D = 2 ms, MTU 576: six request segments 3 us apart; the kernel ACKed
    the first three, then one ACK (ack 3001, window 63) for the last three.

    The middle segments' ACKs are races (burst.py), and so is the first's: the third
    ACK arrived with them and woke accept(), so the server may read, and hold the
    socket, before the first is processed. The last one's window may be that of the
    merged ACK: 63 (the right edge kept from ack 1573) among them.
    """
    config = scenario("handshake", "plain").config
    sim = simulate(
        dataclasses.replace(config, request_bytes=3000, mtu=576), one_way_delay_ms=2,
        iterations=1, receive_space_bytes=32 << 20,
    )  # fmt: skip
    acks = [
        e for e in sim.events
        if isinstance(e, Segment) and e.sender == "server" and e.connection == 1
        and not e.length and e.ack and e.ack > 1
    ]  # fmt: skip
    assert [(a.ack, a.race) for a in acks[:6]] == [
        (525, True), (1049, True), (1573, True), (2097, True), (2621, True), (3001, False)
    ]  # fmt: skip
    assert acks[5].window == 64 and 63 in acks[5].window_alternatives


def test_with_a_delay_only_the_reader_waking_races() -> None:
    """At D = 10 the application is idle when a burst arrives: no D = 0 race, only the
    middle segment of a three-segment burst racing the reader it wakes (ack 2897)."""
    racing = [a for a in _server_acks(10) if a.race]
    assert [a.ack for a in racing] == [2897]
    assert all("woke the reader" in a.explanation for a in racing)
    assert not any("(D = 0)" in a.explanation for a in racing)


def test_pacing_cuts_a_write_into_gso_packets_of_two_at_20ms() -> None:
    from tfolab.model.pacing import tso_segs

    assert tso_segs(1448, None, 0) is None  # no RTT sample yet: unlimited
    assert tso_segs(1448, 20_000_000, 0) == 2  # D = 10: 1414 bytes per 1/1024 s, at least 2
    assert tso_segs(1448, 2_000_000, 0) == 15  # D = 1: 14142 + 65215 >> 3 bytes
    assert tso_segs(1448, 100_000, 0) == 45  # D ~ 0: capped at sk_gso_max_size (65215 B)


def test_tso_autosize_adds_gso_max_size_shifted_by_min_rtt() -> None:
    """tcp_tso_autosize (5.18+: 6.1 and 6.18): + sk_gso_max_size >> (min_rtt_us >> 9).

    The reviewer's case: D = 2 ms (min_rtt 4 ms, shift 7, +509 B), a 7000-byte
    write at MTU 1500 leaves as one 5-segment GSO packet; the pacing rate alone
    (7070 B per 1/1024 s) would cut it 4 + 1.
    """
    from tfolab.model.pacing import tso_segs

    assert tso_segs(1448, 4_000_000, 0, 4_000_000) == 5
    assert tso_segs(1448, 20_000_000, 0, 16_384_000) == 2  # shift 32: nothing added
    config = ScenarioConfig(pattern="wwr", fresh_connection_each_iteration=False, mtu=1500,
                            nodelay=True, single_write=True, first_write_bytes=3500,
                            second_write_bytes=3500)  # fmt: skip
    sim = simulate(config, one_way_delay_ms=2, iterations=2)
    second = [
        e for e in sim.events
        if isinstance(e, Segment) and e.sender == "client" and e.length and e.iteration == 2
    ]  # fmt: skip
    assert [(s.length, "PSH" in s.flags) for s in second] == [(1448, False)] * 4 + [(1208, True)]


def _server_data(delay_ms: float) -> list[Segment]:
    item = scenario("fastopen", "large-data")
    sim = simulate(item.config, one_way_delay_ms=delay_ms, iterations=1)
    return [
        e for e in sim.events
        if isinstance(e, Segment) and e.sender == "server" and e.length and e.connection == 1
    ]  # fmt: skip


def test_at_d10_the_response_carries_a_forced_psh_in_the_middle() -> None:
    """Captured with CUBIC (Debian 6.1 in CI's VM): 1448 . | 1448 P | 104 P.

    tcp_tso_autosize gives 2 segments per GSO packet at a 20 ms RTT, and
    __tcp_transmit_skb forces PSH on every GSO packet of more than one.
    """
    flags = [("PSH" in e.flags, e.length) for e in _server_data(10)]
    assert flags == [(False, 1448), (True, 1448), (True, 104)]
    assert "__tcp_transmit_skb" in _server_data(10)[1].explanation


def test_at_d0_the_response_is_one_gso_packet() -> None:
    flags = [("PSH" in e.flags, e.length) for e in _server_data(0)]
    assert flags == [(False, 1448), (False, 1448), (True, 104)]


def test_at_d0_the_clients_ack_of_two_segments_may_merge_too() -> None:
    """Captured at D=0: the client, blocked in read() right after its write, took the
    socket while the response arrived, and one `ack 3001` left instead of `ack 2897`: the
    last 104 bytes are not ACKed at once, so the race ACK is deferred over them, not
    merged away (delack_timer._merge_deferred)."""
    item = scenario("fastopen", "large-data")
    sim = simulate(item.config, one_way_delay_ms=0, iterations=2)
    client_acks = [
        e for e in sim.events
        if isinstance(e, Segment) and e.sender == "client" and e.flags == ("ACK",)
        and e.ack == 2897
    ]  # fmt: skip
    assert client_acks and all(not a.race and a.merged_ack == 3001 for a in client_acks)
    delayed = simulate(item.config, one_way_delay_ms=10, iterations=2)
    racing = [e for e in delayed.events if isinstance(e, Segment) and e.merged_ack is not None]
    assert racing and all("woke the reader" in e.explanation for e in racing)


# This project's host: Linux 6.18, tcp_rmem 4096 131072 33554432, 832 B measured per skb.
HOST_618 = dataclasses.replace(receive_memory_for((6, 18), 131072, 32 << 20), skb_head_truesize=832)


def _segments(lab: str, name: str, delay_ms: float, **settings: object) -> list[Segment]:
    config = dataclasses.replace(scenario(lab, name).config, **settings)
    sim = simulate(
        config, one_way_delay_ms=delay_ms, iterations=1, receive_space_bytes=32 << 20,
        receive_memory=HOST_618,
    )  # fmt: skip
    return [e for e in sim.events if isinstance(e, Segment) and e.connection == 1]


def test_a_read_that_doubles_the_window_sends_a_window_update() -> None:
    """__tcp_cleanup_rbuf: 9893 bytes read from a 64 KiB offer free enough to double what the
    server may still send, so the client ACKs before its FIN (captured at D = 0, 6.18)."""
    client = [s for s in _segments("fastopen", "cookie-request", 0, request_bytes=9893)
              if s.sender == "client"]  # fmt: skip
    update = [s for s in client if s.flags == ("ACK",) and s.ack == 9894]
    assert len(update) == 1 and "window update" in update[0].explanation
    assert client.index(update[0]) < next(i for i, s in enumerate(client) if "FIN" in s.flags)


def test_the_mss_is_bounded_to_half_the_peers_largest_window() -> None:
    """tcp_sync_mss / tcp_bound_to_half_wnd: at lo's MTU a 64 KiB offer makes the MSS
    32768, so a 34022-byte echo leaves as 32768 + 1254 (captured at D = 0 and 10)."""
    server = _segments("fastopen", "no-cookie", 10, request_bytes=34022)
    data = [(s.length, "PSH" in s.flags) for s in server if s.sender == "server" and s.length]
    assert data == [(32768, False), (1254, True)]


def test_only_a_fresh_tail_skb_grows_by_coalescing() -> None:
    """skb_try_coalesce refuses a cloned `to`: the sender's clone (one segment, or any at
    lo's MTU) starts a tail nothing joins; segments cut in software coalesce. Captured:
    34022 B at MTU 65536 (window 91, not 92) and 15409 B at MTU 5504 (91, not 92)."""
    rules = receive_memory_for((6, 18), 131072, 32 << 20)
    clones = RcvSpace(rules, 10, 65495)
    cut = RcvSpace(rules, 10, 65495)
    clones.queue(32768, 536, fresh=False)
    clones.queue(1254, 32768, fresh=False)
    cut.queue(32768, 536, fresh=True)
    cut.queue(1254, 32768, fresh=True)
    assert clones.rmem - cut.rmem == rules.skb_head_truesize
    window = [
        s.window for s in _segments("fastopen", "no-cookie", 5, mtu=5504, request_bytes=15409)
        if s.sender == "client" and "FIN" in s.flags
    ]  # fmt: skip
    assert window == [91]


def test_below_mtu_296_the_mss_option_is_the_routes_minimum() -> None:
    """ipv4_default_advmss: max(MTU - 40, min_adv_mss 256); the segments sent still fit the
    MTU (tcp_mtu_to_mss): MTU 128 announces 256 and sends 76-byte segments (captured)."""
    segments = _segments("handshake", "plain", 0, mtu=128, request_bytes=200)
    assert {o.label() for s in segments if "SYN" in s.flags for o in s.options} >= {"mss 256"}
    sizes = [s.length for s in segments if s.sender == "client" and s.length]
    assert max(sizes) == 76 and sum(sizes) == 200


def test_a_pure_ack_wakes_no_application() -> None:
    """At D = 0 with TCP_NODELAY, the server (epoll for EPOLLIN) reads both writes at once:
    the ACK that ended the previous round woke nothing, so no read sits between them."""
    config = dataclasses.replace(scenario("delack", "quickack").config, nodelay=True)
    sim = simulate(config, one_way_delay_ms=0, iterations=2)
    reads = [e for e in sim.events if isinstance(e, AppCall) and e.side == "server"
             and e.call == "read" and e.iteration == 2]  # fmt: skip
    assert reads[0].detail.startswith("16 B")


def test_with_timestamps_the_advmss_that_grows_the_window_is_12_bytes_less() -> None:
    """tp->advmss -= TCPOLEN_TSTAMP_ALIGNED at establishment, so tcp_grow_window adds
    2 x 1448, not 2 x 1460, at MTU 1500. Measured with `ss -i` on 6.18 (delack/cork,
    second_write_bytes=1448, pingpong_thresh 3, D = 0): rcv_ssthresh 65160, 68056,
    70952, 73848, 76744; the ACK of round 4 offers window 75, not 76."""
    config = dataclasses.replace(
        scenario("delack", "cork").config, second_write_bytes=1448, mtu=1500, pingpong_thresh=3
    )
    sim = simulate(
        config, one_way_delay_ms=0, iterations=4, receive_space_bytes=32 << 20,
        receive_memory=HOST_618,
    )  # fmt: skip
    acks = [
        e.window for e in sim.events
        if isinstance(e, Segment) and e.sender == "server" and e.iteration == 4 and not e.length
    ]  # fmt: skip
    assert acks and set(acks) == {75}


def test_a_clone_coalesces_once_its_sender_freed_it() -> None:
    """skb_cloned(to) is true only while the sender's retransmit queue holds the data:
    once the ACK covering it is processed there, the next segment joins it (ss -m: r2290
    for 1448 + 10 bytes in quick-ACK rounds, r3122 when the ACK was held)."""
    rules = receive_memory_for((6, 18), 131072, 32 << 20)
    space = RcvSpace(rules, 10, 1448)
    space.queue(1448, 536, fresh=False, end=1449)
    space.release_tail(1449)
    space.queue(10, 1448, fresh=False, end=1459)
    assert space.rmem == rules.skb_head_truesize + 1458


def test_a_clone_grows_the_window_by_two_advmss_so_a_big_mss_opens_it_whole() -> None:
    """truesize_adjust (6.1, 6.18): the sender's clone is judged by its page frags alone,
    so tcp_grow_window's check #2 passes and rcv_ssthresh grows by 2 x advmss. Captured
    on 6.18 at MTU 43388: after a 298-byte request both sides advertise 64 (x 1024), not
    44 (the 2 x rcv_mss step a fresh skb would get)."""
    config = ScenarioConfig(mtu=43388, request_bytes=298)
    six_18 = receive_memory_for((6, 18), 131_072, 33_554_432)  # wscale 10
    sim = simulate(
        config,
        one_way_delay_ms=0,
        iterations=1,
        receive_space_bytes=33_554_432,
        receive_memory=six_18,
    )
    windows = [(e.sender, e.ack, e.window) for e in sim.events if isinstance(e, Segment)]
    assert windows[:4] == [
        ("client", None, 43348), ("server", 1, 43336), ("client", 1, 43), ("client", 1, 43)
    ]  # fmt: skip
    assert {w for _, _, w in windows[4:]} == {64}
    space = RcvSpace(receive_memory_for((6, 18), 131_072, 6_291_456), wscale=10, advmss=43336)
    space.initial_window(peer_timestamps_seen=True)
    space.init_buffer_space()
    before = space.rcv_ssthresh
    assert space.queue(298, 536, fresh=True) and space.rcv_ssthresh == before + 1072
    space = RcvSpace(receive_memory_for((6, 18), 131_072, 6_291_456), wscale=10, advmss=43336)
    space.initial_window(peer_timestamps_seen=True)
    space.init_buffer_space()
    assert space.queue(298, 536, fresh=False) and space.rcv_ssthresh > 64_512


def test_after_a_deferred_race_ack_the_reads_ack_of_the_burst_is_optional() -> None:
    """Captured at D = 0 (handshake, MTU 9000, a 40000-byte request): the server's reader
    won, one deferred ACK of 40001 left, and the read that drained the request sent none
    (nothing was pending); the model's ACK of 35793 may be that ACK, and the read's ACK
    of 40001 after it leaves only when it was not."""
    segments = _segments("handshake", "plain", 0, mtu=9000, request_bytes=40000)
    server_acks = [
        e for e in segments if e.sender == "server" and e.flags == ("ACK",) and not e.length
    ]
    merged = [a for a in server_acks if a.merged_ack == 40001]
    assert len(merged) == 1 and not merged[0].race
    after = [a for a in server_acks if a.ack == 40001 and a.id > merged[0].id]
    assert len(after) == 1 and after[0].race
    assert "deferred ACK already acknowledged" in after[0].explanation
