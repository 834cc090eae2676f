"""netem's lateness, measured from each segment's TSval: a lower bound of what the link
held it beyond D, per sender and 4-tuple, across the TSval clock's wrap.

The physics is CI's emulated VM (stop 49): at D = 5.22 ms the client's last ACKs of a
300 kB answer left netem about 31 ms after TCP sent them, and the server's tail-loss
probe fired for want of them.
"""

from __future__ import annotations

import dataclasses

from tfolab.runner.capture_decode import CapturedSegment, TcpOptions
from tfolab.runner.ts_lateness import with_ts_lateness

D_NS = 5_220_000
CLIENT = ("127.0.0.1", 40000, "127.0.0.1", 7)
SERVER = ("127.0.0.1", 7, "127.0.0.1", 40000)


def _sent(
    tuple4: tuple[str, int, str, int], sent_ns: int, held_ns: int, ts_off: int
) -> CapturedSegment:
    """A segment TCP sent at `sent_ns` (CLOCK_MONOTONIC), captured D + `held_ns` later."""
    src, sport, dst, dport = tuple4
    return CapturedSegment(
        t_ns=sent_ns + D_NS + held_ns,
        src_addr=src,
        src_port=sport,
        dst_addr=dst,
        dst_port=dport,
        flags=("ACK",),
        seq_abs=1,
        ack_abs=1,
        length=0,
        window=64,
        options=TcpOptions(ts_val=(sent_ns // 1_000_000 + ts_off) % 2**32),
        frame=b"",
    )


def _late_ms(segments: list[CapturedSegment]) -> list[float]:
    return [s.late_ns / 1e6 for s in with_ts_lateness(segments)]


def test_a_held_segment_is_measured_late_by_at_most_what_it_was_held() -> None:
    sends = [10_300_000, 20_900_000, 64_400_000, 70_700_000, 71_000_000]
    held = [0, 0, 0, 31_000_000, 30_800_000]
    late = _late_ms([_sent(CLIENT, t, h, 123_456) for t, h in zip(sends, held, strict=True)])
    assert late[:3] == [0.0, 0.0, 0.0]
    for measured, truth in zip(late[3:], held[3:], strict=True):
        # two TSvals read (this one and the least), each truncated to the millisecond
        assert truth / 1e6 - 2.0 < measured <= truth / 1e6


def test_each_sender_on_each_connection_is_its_own_clock() -> None:
    """The server's segments have their own ts_off: its on-time segments are not late
    against the client's clock, and the client's held one is late against its own."""
    segments = [
        _sent(CLIENT, 1_000_000, 0, 7),
        _sent(SERVER, 6_500_000, 0, 3_000_000_000),
        _sent(CLIENT, 12_000_000, 9_000_000, 7),
        _sent(SERVER, 17_500_000, 0, 3_000_000_000),
    ]
    late = _late_ms(segments)
    assert late[1] == late[3] == 0.0 and late[0] == 0.0
    assert 8.0 <= late[2] <= 9.0


def test_the_tsval_clock_wrapping_between_segments_changes_nothing() -> None:
    near_wrap = 2**32 - 30  # TSval wraps 30 ms into the connection
    on_time = [_sent(CLIENT, t, 0, near_wrap) for t in (5_000_000, 25_000_000, 45_000_000)]
    held = _sent(CLIENT, 50_000_000, 12_000_000, near_wrap)
    late = _late_ms([*on_time, held])
    assert late[:3] == [0.0, 0.0, 0.0]
    assert 11.0 <= late[3] <= 12.0


def test_without_timestamps_nothing_is_measured() -> None:
    bare = _sent(CLIENT, 1_000_000, 40_000_000, 0)
    bare = CapturedSegment(**{**bare.__dict__, "options": TcpOptions()})
    assert with_ts_lateness([bare, _sent(CLIENT, 2_000_000, 0, 0)])[0].late_ns == 0


def test_a_frame_sent_again_byte_for_byte_is_not_measured() -> None:
    """The replay scenario's attacker resends a captured SYN, TSval and all, 70 ms after
    TCP sent it: its capture time less that TSval is no lateness of the link's."""
    syn = _sent(CLIENT, 1_000_000, 0, 99)
    replayed = dataclasses.replace(syn, t_ns=syn.t_ns + 70_000_000)
    on_time = _sent(CLIENT, 80_000_000, 0, 99)
    assert _late_ms([syn, on_time, replayed]) == [0.0, 0.0, 0.0]


def test_gaps_either_side_of_the_wrap_are_one_clock() -> None:
    """ts_off about D: capture time - TSval sits either side of 0, that is of 2**32 - 1 and
    0 modulo the wrap; read as one clock, nothing on time is late."""
    ts_off = 6  # ms, against D = 5.22
    sends = [1_100_000, 2_900_000, 10_050_000, 20_700_000]
    late = _late_ms([_sent(CLIENT, t, 0, ts_off) for t in sends])
    assert late == [0.0, 0.0, 0.0, 0.0]
    held = _late_ms(
        [
            *(_sent(CLIENT, t, 0, ts_off) for t in sends),
            _sent(CLIENT, 30_000_000, 8_000_000, ts_off),
        ]
    )
    assert 6.0 < held[-1] <= 8.0


def test_a_lateness_measured_already_keeps_the_larger() -> None:
    """A lossy run's delayer behind netem records its own releases: each is a lower bound
    of what the link held, and so is the TSval's; the larger stands."""
    on_time = _sent(CLIENT, 1_000_000, 0, 5)
    held = _sent(CLIENT, 10_000_000, 9_000_000, 5)
    recorded = dataclasses.replace(held, late_ns=9_500_000)  # more than the TSval shows
    small = dataclasses.replace(held, late_ns=100_000)  # less
    assert with_ts_lateness([on_time, recorded])[1].late_ns == 9_500_000
    assert 8_000_000 <= with_ts_lateness([on_time, small])[1].late_ns <= 9_000_000
