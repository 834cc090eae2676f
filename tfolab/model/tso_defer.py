"""Whether a sender holds back a GSO skb for a bigger one: tcp_tso_should_defer.

tcp_write_xmit asks it before sending an skb of more than one segment that
the congestion or receive window would cut short of the size tcp_tso_autosize
allows (max_segs). Deferring waits for the next ACK to open more room, so a
slow-start flight leaves in skbs of max_segs segments, not of whatever the
last ACK freed (two segments per ACK at one segment acknowledged each).

Rules (net/ipv4/tcp_output.c, 6.18 and 6.1 since "tcp: fix
tcp_tso_should_defer() vs large RTT", October 2025, in stable from 5.4 on),
in order; the first that holds decides:
- send now if the socket's last transmit (tcp_wstamp_ns) is over 1 ms old;
- send now if min(receive window left, congestion window left) holds
  max_segs segments, or the whole skb where more skbs follow it;
- send now if it holds a third of min(snd_wnd, cwnd x mss) (tcp_tso_win_divisor 3);
- send now if nothing is in flight, or the next ACK (the oldest unacknowledged
  skb's send time + srtt) is more than min(srtt / 2, 1 ms) away;
- defer if the skb is longer than the limiting window's room;
- send now if nothing more can join the skb (a FIN after it); else defer.
"""

from __future__ import annotations

from dataclasses import dataclass

NSEC_PER_MSEC = 1_000_000
TSO_WIN_DIVISOR = 3  # net.ipv4.tcp_tso_win_divisor


@dataclass(frozen=True)
class SendRoom:
    """What tcp_tso_should_defer reads of the sender when an skb waits to go."""

    now_ns: int
    wstamp_ns: int  # the last transmit (tcp_wstamp_ns)
    cwnd: int
    in_flight: int  # tcp_packets_in_flight
    mss: int
    send_win: int  # bytes the peer's window still takes past this skb's first byte
    snd_wnd: int
    skb_len: int  # this write-queue skb's bytes still unsent
    skb_is_tail: bool  # no later skb in the write queue
    fin_follows: bool  # tcp_send_fin would put the FIN on this skb
    head_sent_ns: int | None  # the oldest unacknowledged skb's send time (None: none)
    srtt_ns: int


def should_defer(room: SendRoom, max_segs: int) -> bool:
    """tcp_tso_should_defer for an skb of more than one segment."""
    if room.now_ns - room.wstamp_ns - NSEC_PER_MSEC > 0:
        return False
    cong_win = (room.cwnd - room.in_flight) * room.mss
    limit = min(room.send_win, cong_win)
    if limit >= max_segs * room.mss:
        return False
    if not room.skb_is_tail and limit >= room.skb_len:
        return False
    chunk = min(room.snd_wnd, room.cwnd * room.mss) // TSO_WIN_DIVISOR
    if limit >= chunk:
        return False
    if room.head_sent_ns is None:
        return False
    how_far_is_the_ack = room.head_sent_ns + room.srtt_ns - room.now_ns
    if how_far_is_the_ack - min(room.srtt_ns >> 1, NSEC_PER_MSEC) > 0:
        return False
    if cong_win < room.send_win:
        if cong_win <= room.skb_len:
            return True
    elif room.send_win <= room.skb_len:
        return True
    return not room.fin_follows
