"""How many segments one GSO packet carries: the pacing rate and tcp_tso_autosize.

TCP hands the device super-segments (GSO skbs, segmented in software when the
device cannot), and tcp_write_xmit cuts a write into them. The lab's namespace
runs CUBIC (runner: net.ipv4.tcp_congestion_control), whose pacing rate is the
kernel's own formula, so the cut is predictable:

- `pacing_rate` (tcp_update_pacing_rate, run on every ACK for a congestion
  control without cong_control): mss x cwnd / srtt x tcp_pacing_ss_ratio
  (200 % in slow start; the labs never leave it). Before the socket's first
  RTT sample sk_pacing_rate is unlimited (~0UL).
- `tso_segs` (tcp_tso_autosize, Linux 5.18+, so 6.1 and 6.18 alike): the
  bytes the rate allows in 1/1024 s (sk_pacing_shift 10), plus
  sk_gso_max_size >> (tcp_min_rtt in us >> tcp_tso_rtt_log 9) where that
  shift is under 32, capped at sk_gso_max_size; in whole segments, at least
  tcp_min_tso_segs (2). The added term is what makes a short path send bigger
  packets: at D = 2 ms (min_rtt 4 ms, shift 7) it adds 512 bytes, so a
  7000-byte write at MTU 1500 leaves as one 5-segment packet where the rate
  alone allows 4; at D = 10 ms (shift 39) it adds nothing: a 3000-byte
  response leaves as 2896 + 104 bytes (tcp_mss_split_point, tso_fragment).
- __tcp_transmit_skb forces PSH on every GSO skb of more than one segment
  ("to expedite GRO flush at receiver"), and tcp_gso_segment keeps it on the
  skb's last segment: the 1448-byte second segment of that response carries
  PSH although no write ends there.

- `cwnd_quota` (tcp_cwnd_test, 6.1 and 6.18 alike): one GSO skb takes at
  most half the congestion window ("ensure we have at least 2 GSO packets in
  flight") and what the window has left: with cwnd 10 and nothing in flight
  a 690-byte write at MTU 128 (9 segments of 76 B and 6 B) leaves as a
  5-segment packet and then the other 5, PSH on the last of each.

cwnd is TCP_INIT_CWND throughout: no lab loses a segment, and a sender whose
window would grow (slow start after a flight of more than half of it) is
outside the domain before it sends a packet the growth could change
(output.push records it; domain.py names it).
"""

from __future__ import annotations

TCP_INIT_CWND = 10
PACING_SS_RATIO = 200  # net.ipv4.tcp_pacing_ss_ratio, %
PACING_SHIFT = 10  # sk_pacing_shift
MIN_TSO_SEGS = 2  # net.ipv4.tcp_min_tso_segs
TSO_RTT_LOG = 9  # net.ipv4.tcp_tso_rtt_log (5.18+)
# sk_setup_caps: the device's gso_max_size (GSO_LEGACY_MAX_SIZE on lo) less
# MAX_TCP_HEADER + 1 (320 + 1 with a distribution kernel's MAX_HEADER).
GSO_MAX_SIZE = 65536 - 321


def cwnd_quota(in_flight: int, cwnd: int = TCP_INIT_CWND) -> int:
    """Segments the next skb may carry (tcp_cwnd_test): min(max(cwnd / 2, 1), cwnd - in flight)."""
    if in_flight >= cwnd:
        return 0
    return min(max(cwnd >> 1, 1), cwnd - in_flight)


def pacing_rate(mss: int, srtt_ns: int | None, packets_out: int) -> int | None:
    """Bytes per second (tcp_update_pacing_rate); None before any RTT sample: unlimited."""
    if srtt_ns is None:
        return None
    srtt_us = max(srtt_ns // 1000, 1)
    cwnd = max(TCP_INIT_CWND, packets_out)
    return mss * 1_000_000 * PACING_SS_RATIO // 100 * cwnd // srtt_us


def tso_segs(
    mss: int, srtt_ns: int | None, packets_out: int, min_rtt_ns: int | None = None
) -> int | None:
    """Segments per GSO skb (tcp_tso_autosize); None: no cut (unlimited pacing)."""
    rate = pacing_rate(mss, srtt_ns, packets_out)
    if rate is None:
        return None
    allowed = rate >> PACING_SHIFT
    shift = ((min_rtt_ns if min_rtt_ns is not None else srtt_ns or 0) // 1000) >> TSO_RTT_LOG
    if shift < 32:
        allowed += GSO_MAX_SIZE >> shift
    allowed = min(allowed, GSO_MAX_SIZE)
    return max(allowed // mss, MIN_TSO_SEGS)
