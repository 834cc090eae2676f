"""The AF_PACKET socket and its TPACKET_V3 receive ring, for capture.py.

Rules:
- `open` binds the socket to ETH_P_ALL on the interface with a filter that
  keeps nothing; `keep_tcp()` swaps in the filter that keeps TCP, and
  `keep_nothing()` swaps the empty one back. (Binding to protocol 0 does not
  unhook a packet socket: Linux reads 0 as "keep the current protocol".) A
  filter is swapped under RCU, so a frame already being copied when
  keep_nothing() returns still lands; capture.py waits a moment for it.
  Opening costs one RCU grace period (synchronize_net() in PACKET_RX_RING,
  about 8 ms here) and closing another (about 20 ms), so one ring serves any
  number of rounds.
- The filter runs in the kernel before anything is copied: it drops the
  outgoing copy of each packet (PACKET_OUTGOING; see capture.py for why the
  arriving copy is the one kept) and everything that is not IPv4/IPv6 TCP.
- TPACKET_V3 packs frames into blocks. The kernel hands a block over
  (TP_STATUS_USER) when it is full or its retire timeout expires; the timeout
  is set far beyond any run, so blocks are handed over only when full and no
  timer wakes anyone during a measurement. Blocks are taken strictly in the
  kernel's order, checked by their sequence number (seq_num, counted from 1),
  so a block given back but not yet reused is never read twice.
- Only a genuine refusal (EPERM, EACCES, EAFNOSUPPORT, EPROTONOSUPPORT,
  ESOCKTNOSUPPORT, ENOPROTOOPT) is CaptureUnavailable, which lets a run go on
  without packets; any other OSError (EINVAL from a wrong ring request or
  filter) is CaptureFailed, which fails the run.
- The block still being filled when a round ends is read in place, once the
  filter keeps nothing; how many of its frames were read is remembered, so
  the next round starts after them when the kernel goes on filling that block.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

# linux/if_ether.h, linux/if_packet.h, linux/filter.h, asm-generic/socket.h
ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_RX_RING = 5
PACKET_STATISTICS = 6
PACKET_VERSION = 10
TPACKET_V3 = 2
TP_STATUS_USER = 1
PACKET_HOST, PACKET_OUTGOING = 0, 4
ARPHRD_LOOPBACK = 772
SO_ATTACH_FILTER = 26
SKF_AD_PKTTYPE = 0xFFFFF000 + 4  # SKF_AD_OFF + SKF_AD_PKTTYPE, as an unsigned k

BLOCK_DESC = struct.Struct("=II IIII Q")  # version, offset_to_priv, then tpacket_hdr_v1:
#   block_status, num_pkts, offset_to_first_pkt, blk_len, seq_num
STATUS_AT = 8  # offset of block_status in the block
TPACKET3_HDR = struct.Struct("=IIIIII HH")  # next_offset, sec, nsec, snaplen, len, status, mac, net
SLL_AT = 48  # TPACKET_ALIGN(sizeof(struct tpacket3_hdr)): the sockaddr_ll after it
SLL = struct.Struct("=HHiHBB")  # family, protocol, ifindex, hatype, pkttype, halen
STATS_V3 = struct.Struct("=III")  # tp_packets (drops included), tp_drops, tp_freeze_q_cnt
RETIRE_TIMEOUT_MS = 600_000  # hand blocks over when full, not on a timer
NOT_PERMITTED_FIX = (
    "run tfolab as root (or where its user namespace holds CAP_NET_RAW); "
    "the run goes on without the packet capture"
)

T = TypeVar("T")


class CaptureUnavailable(Exception):
    """The kernel or sandbox refused the packet capture; `reason` says why."""

    def __init__(self, reason: str, fix: str = NOT_PERMITTED_FIX) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fix = fix


class CaptureFailed(Exception):
    """Opening the capture failed for a reason that is not a refusal (a wrong ring
    request or filter: EINVAL, ENOMEM, ...): a bug or a broken machine, never skipped."""


# A genuine refusal: the sandbox withholds the capability or the kernel lacks the feature.
NOT_PERMITTED = frozenset({errno.EPERM, errno.EACCES})
NOT_SUPPORTED = frozenset(
    {errno.EAFNOSUPPORT, errno.EPROTONOSUPPORT, errno.ESOCKTNOSUPPORT, errno.ENOPROTOOPT}
)


def refused_as_unavailable(call: Callable[[], T], what: str) -> T:
    """Run one step of opening the capture. A refusal (NOT_PERMITTED, NOT_SUPPORTED)
    becomes CaptureUnavailable with the errno's name; any other OSError, CaptureFailed."""
    try:
        return call()
    except OSError as err:
        code = err.errno or 0
        name = errno.errorcode.get(code, str(code))
        if code in NOT_PERMITTED:
            why = "not permitted (no CAP_NET_RAW in this namespace)"
        elif code in NOT_SUPPORTED:
            why = "not supported by this kernel or sandbox"
        else:
            raise CaptureFailed(
                f"packet capture failed: {what}: {os.strerror(code)} ({name}); "
                "this is not a refusal but a wrong request or a broken kernel"
            ) from err
        raise CaptureUnavailable(f"packet capture refused: {what}: {why} ({name})") from None


@dataclass(frozen=True)
class RingFrame:
    """One frame as the ring held it, before decoding."""

    t_realtime_ns: int  # the kernel's stamp
    wire_len: int  # the frame's full length
    pkttype: int  # PACKET_HOST, PACKET_OUTGOING, ...
    hatype: int  # ARPHRD_LOOPBACK on lo
    data: bytes  # at most the snap length


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def tcp_filter(snaplen: int) -> bytes:
    """Classic BPF: drop outgoing copies; keep IPv4/IPv6 TCP, `snaplen` bytes of it."""
    ld_w_abs, ldh_abs, ldb_abs, jeq, ret = 0x20, 0x28, 0x30, 0x15, 0x06
    return b"".join(
        (
            _insn(ld_w_abs, 0, 0, SKF_AD_PKTTYPE),  # 0: A = skb->pkt_type
            _insn(jeq, 8, 0, PACKET_OUTGOING),  # 1: outgoing copy -> 10 (drop)
            _insn(ldh_abs, 0, 0, 12),  # 2: A = ethertype
            _insn(jeq, 0, 2, 0x0800),  # 3: IPv4 -> 4, else 6
            _insn(ldb_abs, 0, 0, 14 + 9),  # 4: A = IPv4 protocol
            _insn(jeq, 3, 4, 6),  # 5: TCP -> 9, else 10
            _insn(jeq, 0, 3, 0x86DD),  # 6: IPv6 -> 7, else 10
            _insn(ldb_abs, 0, 0, 14 + 6),  # 7: A = IPv6 next header
            _insn(jeq, 0, 1, 6),  # 8: TCP -> 9, else 10
            _insn(ret, 0, 0, snaplen),  # 9: keep
            _insn(ret, 0, 0, 0),  # 10: drop
        )
    )


def nothing_filter() -> bytes:
    """Classic BPF that keeps no packet."""
    return _insn(0x06, 0, 0, 0)


def attach_filter(sock: socket.socket, program: bytes) -> None:
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = struct.pack("@HL", len(program) // 8, ctypes.addressof(buffer))
    sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)


def parse_block(block: bytes, skip: int = 0) -> list[RingFrame]:
    """The frames of one TPACKET_V3 block (descriptor and packets), after the first `skip`."""
    _version, _priv, _status, num_pkts, offset, _blk_len, _seq = BLOCK_DESC.unpack_from(block)
    frames = []
    for index in range(num_pkts):
        nxt, sec, nsec, snaplen, wire_len, _st, mac, _net = TPACKET3_HDR.unpack_from(block, offset)
        if index >= skip:
            _fam, _proto, _ifindex, hatype, pkttype, _hl = SLL.unpack_from(block, offset + SLL_AT)
            data = block[offset + mac : offset + mac + snaplen]
            frames.append(RingFrame(sec * 1_000_000_000 + nsec, wire_len, pkttype, hatype, data))
        offset += nxt
    return frames


@dataclass
class PacketRing:
    """An AF_PACKET socket bound to the interface, with its mapped TPACKET_V3 ring."""

    sock: socket.socket
    memory: mmap.mmap
    block_bytes: int
    blocks: int
    snaplen: int
    next_index: int = 0
    next_seq: int = 1  # the kernel numbers blocks from 1 (tpacket_hdr_v1.seq_num)
    taken_from_open: int = 0  # frames of block next_seq already read in an earlier round
    copied: list[tuple[bytes, int]] = field(default_factory=list)  # (block, frames to skip)

    @staticmethod
    def open(interface: str, block_bytes: int, blocks: int, snaplen: int) -> PacketRing:
        def opened() -> socket.socket:
            return socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # 0: not hooked in yet

        sock = refused_as_unavailable(opened, "opening an AF_PACKET socket")
        try:
            setopt = sock.setsockopt
            refused_as_unavailable(
                lambda: setopt(SOL_PACKET, PACKET_VERSION, TPACKET_V3), "TPACKET_V3"
            )
            refused_as_unavailable(lambda: attach_filter(sock, nothing_filter()), "the BPF filter")
            # tp_block_size, tp_block_nr, tp_frame_size, tp_frame_nr (V3 packs frames of
            # any size into a block: one nominal frame per block), tp_retire_blk_tov,
            # tp_sizeof_priv, tp_feature_req_word
            req = struct.pack(
                "=7I", block_bytes, blocks, block_bytes, blocks, RETIRE_TIMEOUT_MS, 0, 0
            )
            refused_as_unavailable(
                lambda: setopt(SOL_PACKET, PACKET_RX_RING, req), "the packet ring (PACKET_RX_RING)"
            )
            size = block_bytes * blocks
            memory = refused_as_unavailable(
                lambda: mmap.mmap(
                    sock.fileno(), size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE
                ),
                "mapping the packet ring",
            )
            refused_as_unavailable(
                lambda: sock.bind((interface, ETH_P_ALL)), f"binding to {interface}"
            )
        except BaseException:
            sock.close()
            raise
        return PacketRing(sock, memory, block_bytes, blocks, snaplen)

    def keep_tcp(self) -> None:
        attach_filter(self.sock, tcp_filter(self.snaplen))

    def keep_nothing(self) -> None:
        attach_filter(self.sock, nothing_filter())

    def statistics(self) -> tuple[int, int]:
        """(packets, drops) since the last call: reading resets the kernel's counters."""
        packets, drops, _freezes = STATS_V3.unpack(
            self.sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, STATS_V3.size)
        )
        return packets, drops

    def _desc(self, index: int) -> tuple[int, int, int, int]:
        base = index * self.block_bytes
        _v, _p, status, num_pkts, _first, blk_len, seq = BLOCK_DESC.unpack_from(self.memory, base)
        return status, num_pkts, blk_len, seq

    def take_full_blocks(self) -> None:
        """Copy out every block the kernel has handed over, in order, and give each back."""
        while True:
            status, _num, blk_len, seq = self._desc(self.next_index)
            if not status & TP_STATUS_USER or seq != self.next_seq:
                return
            base = self.next_index * self.block_bytes
            self.copied.append((self.memory[base : base + blk_len], self.taken_from_open))
            struct.pack_into("=I", self.memory, base + STATUS_AT, 0)  # TP_STATUS_KERNEL again
            self.next_index = (self.next_index + 1) % self.blocks
            self.next_seq += 1
            self.taken_from_open = 0

    def take_open_block(self) -> None:
        """Once nothing is kept: the frames of the block the kernel is still filling."""
        status, num_pkts, blk_len, seq = self._desc(self.next_index)
        if status & TP_STATUS_USER or seq != self.next_seq or num_pkts <= self.taken_from_open:
            return
        base = self.next_index * self.block_bytes
        self.copied.append((self.memory[base : base + blk_len], self.taken_from_open))
        self.taken_from_open = num_pkts

    def frames(self) -> list[RingFrame]:
        """Every frame copied out since the last call, in arrival order."""
        found = [frame for block, skip in self.copied for frame in parse_block(block, skip)]
        self.copied = []
        return found

    def close(self) -> None:
        self.memory.close()
        self.sock.close()
