"""The replay scenario's attacker: resend a captured SYN from a raw socket in the lab namespace.

Rules:
- The bytes are the captured frame's IPv4 packet, unchanged but for the TCP
  checksum: on lo the kernel leaves it partial (CHECKSUM_PARTIAL, only the
  pseudo-header sum), and a packet from a raw socket is checked on arrival,
  so it is recomputed as a sender on a real link would have left it. The
  kernel fills in the IP header's checksum (and an IP id of 0) itself.
- IPPROTO_RAW implies IP_HDRINCL and goes through lo's qdisc and netfilter's
  INPUT hook like any packet, so the lab's delay applies to it once: it
  arrives D after it is sent, as the model's link says.
- Call it only inside the lab's namespace (the runner), which grants
  CAP_NET_RAW there.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterable

from tfolab.runner.capture import CapturedSegment

ETH_HEADER = 14


def first_syn_with_data(segments: Iterable[CapturedSegment]) -> CapturedSegment | None:
    """The first captured SYN (not SYN-ACK) that carried data: what the attacker replays."""
    for seg in sorted(segments, key=lambda s: s.t_ns):
        if seg.flags == ("SYN",) and seg.length > 0:
            return seg
    return None


def tcp_checksum(ip_packet: bytes) -> bytes:
    """The IPv4 packet with its TCP checksum computed in full (RFC 793 pseudo-header)."""
    ihl = (ip_packet[0] & 0x0F) * 4
    total = struct.unpack("!H", ip_packet[2:4])[0]
    packet = bytearray(ip_packet[:total])
    segment = bytearray(packet[ihl:])
    segment[16:18] = b"\0\0"
    pseudo = bytes(packet[12:20]) + struct.pack("!BBH", 0, socket.IPPROTO_TCP, len(segment))
    data = pseudo + bytes(segment) + (b"\0" if len(segment) % 2 else b"")
    total_sum = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total_sum >> 16:
        total_sum = (total_sum & 0xFFFF) + (total_sum >> 16)
    segment[16:18] = struct.pack("!H", ~total_sum & 0xFFFF)
    return bytes(packet[:ihl] + segment)


def send_again(syn: CapturedSegment) -> int:
    """Send the captured SYN once more; returns when it was sent (CLOCK_MONOTONIC ns)."""
    packet = tcp_checksum(syn.frame[ETH_HEADER:])
    with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW) as raw:
        sent_ns = time.monotonic_ns()
        raw.sendto(packet, (syn.dst_addr, 0))
    return sent_ns
