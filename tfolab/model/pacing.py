"""How many segments one GSO packet carries: the pacing rate and tcp_tso_autosize.

TCP hands the device super-segments (GSO skbs, segmented in software when the
device cannot), and tcp_write_xmit cuts a write into them. The lab's namespace
runs CUBIC (runner: net.ipv4.tcp_congestion_control), whose pacing rate is the
kernel's own formula, so the cut is predictable:

- `pacing_rate` (tcp_update_pacing_rate, run on every ACK for a congestion
  control without cong_control): mss x cwnd / srtt x tcp_pacing_ss_ratio
  (200 % in slow start; the labs never leave it). Before the socket's first
  RTT sample sk_pacing_rate is unlimited (~0UL).
- `tso_segs` (tcp_tso_autosize): the bytes the rate allows in 1/1024 s
  (sk_pacing_shift 10), in whole segments, at least tcp_min_tso_segs (2).
  At D = 10 ms (srtt 20 ms, cwnd 10) that is 2: a 3000-byte response leaves as
  2896 + 104 bytes (tcp_mss_split_point, tso_fragment).
- __tcp_transmit_skb forces PSH on every GSO skb of more than one segment
  ("to expedite GRO flush at receiver"), and tcp_gso_segment keeps it on the
  skb's last segment: the 1448-byte second segment of that response carries
  PSH although no write ends there.

cwnd is TCP_INIT_CWND throughout: no lab loses a segment or fills a window.
"""

from __future__ import annotations

TCP_INIT_CWND = 10
PACING_SS_RATIO = 200  # net.ipv4.tcp_pacing_ss_ratio, %
PACING_SHIFT = 10  # sk_pacing_shift
MIN_TSO_SEGS = 2  # net.ipv4.tcp_min_tso_segs


def pacing_rate(mss: int, srtt_ns: int | None, packets_out: int) -> int | None:
    """Bytes per second (tcp_update_pacing_rate); None before any RTT sample: unlimited."""
    if srtt_ns is None:
        return None
    srtt_us = max(srtt_ns // 1000, 1)
    cwnd = max(TCP_INIT_CWND, packets_out)
    return mss * 1_000_000 * PACING_SS_RATIO // 100 * cwnd // srtt_us


def tso_segs(mss: int, srtt_ns: int | None, packets_out: int) -> int | None:
    """Segments per GSO skb (tcp_tso_autosize); None: no cut (unlimited pacing)."""
    rate = pacing_rate(mss, srtt_ns, packets_out)
    if rate is None:
        return None
    return max((rate >> PACING_SHIFT) // mss, MIN_TSO_SEGS)
