"""Captured frames into typed TCP segments, numbered the way the model numbers them.

Rules:
- A frame is what a packet socket on `lo` hands over: lo's link type is
  ARPHRD_LOOPBACK, whose frames carry an Ethernet header with zero MACs, so
  they decode (and are written to pcap, LINKTYPE_ETHERNET) as Ethernet; that
  is what tcpdump says on lo too ("link-type EN10MB").
- `decode_frame` keeps IPv4 and IPv6 TCP and returns None for anything else.
  `length` is the payload the IP header announces (a GSO super-segment counts
  whole, and a frame cut by a snap length still reports its full payload).
- Flags are spelt as in tfolab/model/events.py, in one fixed order: SYN, FIN,
  RST, ACK, PSH, URG, ECE, CWR (so a SYN-ACK is ("SYN", "ACK"), a FIN
  ("FIN", "ACK"), data ("ACK", "PSH"), as the model writes them).
- Options keep their wire order and are the model's types
  (tfolab.model.options): a cookie keeps its bytes (the model's states only
  its length), the experimental form (kind 254, magic 0xF989) is a FastOpen
  of option kind 254, an unknown kind is an OtherOption, and a length that
  runs past the header ends the list with Malformed. NOP and EOL are not
  listed.
- `number_connections` numbers as the model does (events.py, Segment.seq):
  each side's ISN is 0, its SYN takes number 0 and data starts at 1, so after
  a SYN carrying N bytes the next byte is N + 1. tcpdump's relative numbers
  differ there (docs/TCP-NOTES.md, "Reading tcpdump next to the ladder").
"""

from __future__ import annotations

import ipaddress
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import dpkt

from tfolab.model.captured import CapturedRow
from tfolab.model.events import Side
from tfolab.model.options import (
    FastOpen,
    Malformed,
    Mss,
    OtherOption,
    SackBlocks,
    SackPermitted,
    TcpOption,
    Timestamps,
    WindowScale,
    fastopen_of,
)

ETH_HEADER = 14
ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
IPPROTO_TCP = 6
PCAP_SNAPLEN = 262_144

FLAG_ORDER: tuple[tuple[int, str], ...] = (
    (0x02, "SYN"),
    (0x01, "FIN"),
    (0x04, "RST"),
    (0x10, "ACK"),
    (0x08, "PSH"),
    (0x20, "URG"),
    (0x40, "ECE"),
    (0x80, "CWR"),
)

OPT_EOL, OPT_NOP, OPT_MSS, OPT_WSCALE, OPT_SACK_PERM, OPT_SACK, OPT_TS = 0, 1, 2, 3, 4, 5, 8
OPT_FASTOPEN = 34  # RFC 7413
OPT_EXPERIMENTAL = 254  # with the 16-bit magic below: the pre-RFC Fast Open option
TFO_EXP_MAGIC = 0xF989


@dataclass(frozen=True)
class TcpOptions:
    """The decoded TCP options of one segment: `listed` in wire order, typed as the model's
    (tfolab.model.options), and the values the model does not state kept beside them."""

    listed: tuple[TcpOption, ...] = ()
    ts_val: int | None = None
    ts_ecr: int | None = None
    sack_blocks: tuple[tuple[int, int], ...] = ()  # absolute (left, right) edges

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(option.label() for option in self.listed)

    @property
    def mss(self) -> int | None:
        return next((o.value for o in self.listed if isinstance(o, Mss)), None)

    @property
    def wscale(self) -> int | None:
        return next((o.shift for o in self.listed if isinstance(o, WindowScale)), None)

    @property
    def sack_permitted(self) -> bool:
        return any(isinstance(o, SackPermitted) for o in self.listed)

    @property
    def tfo(self) -> FastOpen | None:
        return fastopen_of(self.listed)


@dataclass(frozen=True)
class CapturedSegment:
    """One TCP segment seen on lo; `t_ns` is CLOCK_MONOTONIC, when it arrived."""

    t_ns: int
    src_addr: str
    src_port: int
    dst_addr: str
    dst_port: int
    flags: tuple[str, ...]
    seq_abs: int
    ack_abs: int | None  # None when the ACK flag is off
    length: int  # payload bytes
    window: int  # as on the wire, not scaled
    options: TcpOptions
    frame: bytes = field(repr=False)  # the frame as captured, for pcap
    t_realtime_ns: int = 0  # the kernel's own stamp (CLOCK_REALTIME), for pcap
    wire_len: int = 0  # the frame's full length (len(frame) unless cut by a snap length)
    lost: bool = False  # dropped on the way (a drop plan): t_ns is when its delay ended
    # how much later than its due time (sent + D) the delay backend released it, as the
    # backend measured it (tfo-delay --late-record-fd); 0: not measured
    late_ns: int = 0

    @property
    def tuple4(self) -> tuple[str, int, str, int]:
        return (self.src_addr, self.src_port, self.dst_addr, self.dst_port)


def tcp_flags(bits: int) -> tuple[str, ...]:
    return tuple(name for bit, name in FLAG_ORDER if bits & bit)


def decode_options(raw: bytes) -> TcpOptions:
    """Decode the option bytes of a TCP header (everything after its first 20 bytes)."""
    listed: list[TcpOption] = []
    ts_val = ts_ecr = None
    sack_blocks: tuple[tuple[int, int], ...] = ()
    for item in dpkt.tcp.parse_opts(raw):
        if item is None:  # a length byte running past the header
            listed.append(Malformed())
            break
        kind, data = int(item[0]), bytes(item[1])
        if kind in (OPT_EOL, OPT_NOP):
            continue
        if kind == OPT_MSS and len(data) == 2:
            listed.append(Mss(struct.unpack("!H", data)[0]))
        elif kind == OPT_SACK_PERM:
            listed.append(SackPermitted())
        elif kind == OPT_TS and len(data) == 8:
            ts_val, ts_ecr = struct.unpack("!II", data)
            listed.append(Timestamps())
        elif kind == OPT_WSCALE and len(data) == 1:
            listed.append(WindowScale(data[0]))
        elif kind == OPT_SACK and len(data) % 8 == 0:
            edges = struct.unpack(f"!{len(data) // 4}I", data)
            sack_blocks = tuple(zip(edges[0::2], edges[1::2], strict=True))
            listed.append(SackBlocks(len(sack_blocks)))
        elif kind == OPT_FASTOPEN:
            listed.append(FastOpen(kind, len(data), data.hex()))
        elif kind == OPT_EXPERIMENTAL and data[:2] == TFO_EXP_MAGIC.to_bytes(2, "big"):
            listed.append(FastOpen(kind, len(data) - 2, data[2:].hex()))
        else:
            listed.append(OtherOption(kind))
    return TcpOptions(tuple(listed), ts_val, ts_ecr, sack_blocks)


def decode_frame(
    frame: bytes, t_ns: int, t_realtime_ns: int = 0, wire_len: int | None = None
) -> CapturedSegment | None:
    """One Ethernet frame from lo into a CapturedSegment; None if it is not TCP.

    Raises ValueError for a TCP/IP frame too short or malformed to read.
    """
    if len(frame) < ETH_HEADER:
        raise ValueError(f"frame of {len(frame)} bytes is shorter than an Ethernet header")
    ethertype = struct.unpack_from("!H", frame, 12)[0]
    try:
        if ethertype == ETHERTYPE_IPV4:
            ip4 = dpkt.ip.IP(frame[ETH_HEADER:])
            if ip4.p != IPPROTO_TCP or ip4.offset:  # a later fragment: no TCP header
                return None
            src, dst = str(ipaddress.IPv4Address(ip4.src)), str(ipaddress.IPv4Address(ip4.dst))
            total = ip4.len or (wire_len or len(frame)) - ETH_HEADER  # 0 = a TSO/BIG TCP packet
            ip_payload = total - 4 * ip4.hl
            tcp = ip4.data
        elif ethertype == ETHERTYPE_IPV6:
            ip6 = dpkt.ip6.IP6(frame[ETH_HEADER:])
            if ip6.nxt != IPPROTO_TCP:
                return None
            src, dst = str(ipaddress.IPv6Address(ip6.src)), str(ipaddress.IPv6Address(ip6.dst))
            ip_payload = ip6.plen or (wire_len or len(frame)) - ETH_HEADER - 40
            tcp = ip6.data
        else:
            return None
    except (dpkt.UnpackError, ValueError) as err:
        raise ValueError(f"undecodable IP packet: {err}") from None
    if not isinstance(tcp, dpkt.tcp.TCP):
        raise ValueError("the TCP header is cut short")
    bits = int(tcp.flags)
    return CapturedSegment(
        t_ns=t_ns,
        src_addr=src,
        src_port=int(tcp.sport),
        dst_addr=dst,
        dst_port=int(tcp.dport),
        flags=tcp_flags(bits),
        seq_abs=int(tcp.seq),
        ack_abs=int(tcp.ack) if bits & 0x10 else None,
        length=max(0, int(ip_payload) - 4 * int(tcp.off)),
        window=int(tcp.win),
        options=decode_options(bytes(tcp.opts)),
        frame=bytes(frame),
        t_realtime_ns=t_realtime_ns,
        wire_len=wire_len if wire_len is not None else len(frame),
    )


def decoded_or_why(
    frame: bytes, t_ns: int, t_realtime_ns: int, wire_len: int
) -> CapturedSegment | str:
    """decode_frame, or why the frame is no TCP segment to keep (for a capture's skip list)."""
    try:
        seg = decode_frame(frame, t_ns, t_realtime_ns, wire_len)
    except ValueError as err:
        return str(err)
    return "not TCP" if seg is None else seg


# ------------------------------------------------------------ numbering


@dataclass(frozen=True)
class NumberedSegment:
    """A captured segment as the JSON contract's `captured` rows show it."""

    t_ms: float  # arrival, from the origin given to number_connections
    connection: int  # 1-based, in order of first SYN
    sender: Side  # "client" = the side that sent the SYN
    flags: tuple[str, ...]
    seq: int  # relative: the sender's ISN is 0
    ack: int | None  # relative to the receiver's ISN; None when the ACK flag is off
    length: int
    options: tuple[TcpOption, ...]
    segment: CapturedSegment = field(repr=False, compare=False)

    def to_row(self, connection: int | None = None) -> CapturedRow:
        """The row the runner sends (the contract's `captured` shape), under `connection`
        where the measured part's connections are numbered apart."""
        return CapturedRow(
            t_ms=round(self.t_ms, 4),
            connection=self.connection if connection is None else connection,
            sender=self.sender,
            flags=list(self.flags),
            seq=self.seq,
            ack=self.ack,
            length=self.length,
            options=list(self.options),
            window=self.segment.window,
            lost=self.segment.lost,
            late_ms=round(self.segment.late_ns / 1e6, 4),
        )


@dataclass
class _Connection:
    number: int
    client: tuple[str, int]  # (address, port)
    isn: dict[tuple[str, int], int]  # endpoint -> its ISN (known or assumed)
    # the client sent a segment without SYN: its handshake is over, so a SYN with the
    # same ISN now is another connection (a replayed SYN), not the SYN sent again
    client_moved_on: bool = False


def _distance(
    conn: _Connection, seg: CapturedSegment, src: tuple[str, int], dst: tuple[str, int]
) -> int:
    """How far the segment's numbers sit above this incarnation's ISNs (unknown: far)."""
    far = 2**32
    parts = []
    if src in conn.isn:
        parts.append((seg.seq_abs - conn.isn[src]) % 2**32)
    if seg.ack_abs is not None and dst in conn.isn:
        parts.append((seg.ack_abs - conn.isn[dst]) % 2**32)
    return max(parts) if parts else far


def _incarnation(
    incarnations: list[_Connection],
    seg: CapturedSegment,
    src: tuple[str, int],
    dst: tuple[str, int],
) -> _Connection:
    """Of several connections on one 4-tuple, the one whose numbers the segment carries.

    Linux's ISN for a 4-tuple grows with time (secure_tcp_seq: 64 ns a step), so
    a segment of an older incarnation (a TIME_WAIT socket's ACK, the RST that
    answers it) sits just above that incarnation's ISNs and far from the new
    ones; a tie goes to the newest.
    """
    best = incarnations[-1]
    best_distance = _distance(best, seg, src, dst)
    for conn in reversed(incarnations[:-1]):
        distance = _distance(conn, seg, src, dst)
        if distance < best_distance:
            best, best_distance = conn, distance
    return best


def _base(conn: _Connection, endpoint: tuple[str, int], first_seq: int) -> int:
    """The endpoint's ISN; a side whose SYN was not captured gets first_seq - 1 (data from 1)."""
    if endpoint not in conn.isn:
        conn.isn[endpoint] = (first_seq - 1) % 2**32
    return conn.isn[endpoint]


def number_connections(
    segments: Iterable[CapturedSegment], origin_ns: int
) -> tuple[NumberedSegment, ...]:
    """Group by 4-tuple into connections and number seq/ack from 0 per side, as the model does.

    Connections are numbered in the order their first SYN (or, lacking one,
    their first segment) was seen; a client SYN on a 4-tuple already seen
    starts a new connection when its ISN is new or the old connection's client
    has sent a segment without SYN (a replayed SYN, same bytes); otherwise it
    is the SYN sent again (its timer fired: the client sends nothing else while
    in SYN_SENT, and the path keeps order). A later segment belongs to the
    incarnation whose numbers it carries (`_incarnation`). Without a captured
    SYN the sender of a SYN-ACK is the server, else the first segment's sender
    is taken as the client.
    `origin_ns` (CLOCK_MONOTONIC) is the scenario's first measured call.
    """
    ordered = sorted(segments, key=lambda s: s.t_ns)
    current: dict[frozenset[tuple[str, int]], list[_Connection]] = {}
    count = 0
    rows: list[NumberedSegment] = []
    for seg in ordered:
        src, dst = (seg.src_addr, seg.src_port), (seg.dst_addr, seg.dst_port)
        key = frozenset((src, dst))
        incarnations = current.setdefault(key, [])
        syn, ack_flag = "SYN" in seg.flags, "ACK" in seg.flags
        newest = incarnations[-1] if incarnations else None
        new_syn = (
            syn
            and not ack_flag
            and newest is not None
            and (newest.isn.get(src) != seg.seq_abs or newest.client_moved_on)
        )
        if newest is None or new_syn:
            count += 1
            conn = _Connection(count, dst if syn and ack_flag else src, {})
            incarnations.append(conn)
        elif syn:
            conn = newest
        else:
            conn = _incarnation(incarnations, seg, src, dst)
        if not syn and src == conn.client:
            conn.client_moved_on = True
        if syn:
            conn.isn.setdefault(src, seg.seq_abs)
        seq = (seg.seq_abs - _base(conn, src, seg.seq_abs)) % 2**32
        ack = None
        if seg.ack_abs is not None:
            ack = (seg.ack_abs - _base(conn, dst, seg.ack_abs)) % 2**32
        rows.append(
            NumberedSegment(
                t_ms=(seg.t_ns - origin_ns) / 1_000_000,
                connection=conn.number,
                sender="client" if src == conn.client else "server",
                flags=seg.flags,
                seq=seq,
                ack=ack,
                length=seg.length,
                options=seg.options.listed,
                segment=seg,
            )
        )
    return tuple(rows)


# ------------------------------------------------------------ pcap


def pcap_frames(segments: Iterable[CapturedSegment]) -> list[tuple[int, bytes]]:
    """(CLOCK_REALTIME ns, frame) pairs of captured segments, for write_pcap."""
    return [(seg.t_realtime_ns, seg.frame) for seg in segments]


def write_pcap(path: str | Path, frames: Iterable[tuple[int, bytes]]) -> int:
    """Write (t_ns, Ethernet frame) pairs as a nanosecond pcap; returns how many.

    t_ns is since the Unix epoch for real captures (pcap_frames); any origin at
    or before the first frame works for synthetic ones (tcpdump then shows dates in 1970). The link
    type is Ethernet, as for a capture on lo, so `tcpdump -r FILE` reads it.
    """
    count = 0
    with open(path, "wb") as handle:
        writer = dpkt.pcap.Writer(
            handle, snaplen=PCAP_SNAPLEN, linktype=dpkt.pcap.DLT_EN10MB, nano=True
        )
        for t_ns, frame in frames:
            if t_ns < 0:
                raise ValueError(f"pcap cannot hold a time before its origin: {t_ns} ns")
            # A Fraction keeps every nanosecond (a float of epoch seconds would not).
            writer.writepkt_time(bytes(frame), Fraction(t_ns, 1_000_000_000))
            count += 1
    return count
