"""tso_defer.should_defer: tcp_tso_should_defer's rules, each in its order (6.18, 6.1)."""

from __future__ import annotations

import dataclasses

from tfolab.model.tso_defer import NSEC_PER_MSEC, SendRoom, should_defer

MSS = 1448
SRTT = 20 * NSEC_PER_MSEC
# mid-train in slow start: an ACK freed two segments of a 32-segment window, the
# oldest unacknowledged skb left a round trip ago, so the next ACK is due now
MID_TRAIN = SendRoom(
    now_ns=100 * NSEC_PER_MSEC,
    wstamp_ns=100 * NSEC_PER_MSEC - 50_000,
    cwnd=32,
    in_flight=30,
    mss=MSS,
    send_win=200_000,
    snd_wnd=200_000,
    skb_len=20 * MSS,
    skb_is_tail=True,
    fin_follows=False,
    head_sent_ns=80 * NSEC_PER_MSEC,
    srtt_ns=SRTT,
)


def test_two_free_segments_wait_for_a_three_segment_packet() -> None:
    assert should_defer(MID_TRAIN, max_segs=3)


def test_a_full_packet_goes() -> None:
    assert not should_defer(MID_TRAIN, max_segs=2)


def test_a_train_more_than_1_ms_after_the_last_send_goes() -> None:
    late = dataclasses.replace(MID_TRAIN, wstamp_ns=MID_TRAIN.now_ns - 2 * NSEC_PER_MSEC)
    assert not should_defer(late, max_segs=3)


def test_a_third_of_the_window_goes() -> None:
    room = dataclasses.replace(MID_TRAIN, in_flight=21)  # 11 segments of 32: > 32 / 3
    assert not should_defer(room, max_segs=45)


def test_nothing_in_flight_or_an_ack_far_off_goes() -> None:
    assert not should_defer(dataclasses.replace(MID_TRAIN, head_sent_ns=None), max_segs=3)
    fresh = dataclasses.replace(MID_TRAIN, head_sent_ns=MID_TRAIN.now_ns)  # ACK 20 ms away
    assert not should_defer(fresh, max_segs=3)


def test_the_skb_that_fits_and_ends_the_queue_waits_unless_a_fin_follows() -> None:
    short = dataclasses.replace(MID_TRAIN, skb_len=MSS + 88, in_flight=29)  # fits in 3
    assert should_defer(short, max_segs=4)
    assert not should_defer(dataclasses.replace(short, fin_follows=True), max_segs=4)


def test_a_middle_skb_that_fits_goes() -> None:
    middle = dataclasses.replace(MID_TRAIN, skb_len=2 * MSS, skb_is_tail=False)
    assert not should_defer(middle, max_segs=3)
