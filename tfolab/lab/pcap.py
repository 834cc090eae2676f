"""pcap files for Wireshark and tcpdump: the kernel's capture, or the model's prediction.

`tfolab run --pcap FILE` writes what the kernel put on lo; `tfolab simulate
--pcap FILE` writes the model's segments as the frames they would be, so a
student can open prediction and reality side by side.

Rules:
- The path is checked before anything runs (`check_writable`): a run that
  cannot save its capture is refused up front (UserError, exit 2).
- Model frames: Ethernet (zero MACs, as on lo), IPv4 127.0.0.1 both ways, the
  server on port 7000 and connection N's client on port 40000 + N, seq/ack
  exactly as the model numbers them (each side's ISN 0), options in the
  kernel's order (tcp_options_write): MSS, SACK permitted, timestamps, window
  scale, Fast Open. A cookie's bytes are the model's stand-in. Times are the
  arrivals, from 0 (tcpdump shows 1970).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from pathlib import Path

import dpkt

from tfolab.core.errors import UserError
from tfolab.model import Segment, Simulation
from tfolab.model.options import Mss, SackPermitted, Timestamps, WindowScale
from tfolab.runner.capture import write_pcap

SERVER_PORT = 7000
CLIENT_PORT_BASE = 40000
LOOPBACK = bytes([127, 0, 0, 1])
TFO_EXPERIMENTAL_MAGIC = 0xF989
_FLAG_BITS = {
    "FIN": dpkt.tcp.TH_FIN,
    "SYN": dpkt.tcp.TH_SYN,
    "RST": dpkt.tcp.TH_RST,
    "PSH": dpkt.tcp.TH_PUSH,
    "ACK": dpkt.tcp.TH_ACK,
}


def check_writable(path: str, flag: str = "--pcap", example: str = "run.pcap") -> Path:
    """An output file's path (`flag`'s), or UserError before anything starts when it
    cannot be written."""
    target = Path(path).expanduser()
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise UserError(f"{flag} {path}: that is a folder", f"give a file name, e.g. {example}")
    if not folder.is_dir():
        raise UserError(f"{flag} {path}: the folder {folder} does not exist", "create it first")
    if not os.access(target if target.exists() else folder, os.W_OK):
        raise UserError(f"{flag} {path}: not writable by this user", "choose another path")
    return target


def write_captured(path: Path, frames: Iterable[tuple[int, bytes]]) -> int:
    return write_pcap(path, frames)


def write_simulated(path: Path, simulations: Iterable[Simulation]) -> int:
    """The model's segments of every simulation, one after the other, as a pcap."""
    frames: list[tuple[int, bytes]] = []
    offset_ms = 0.0
    connection_base = 0
    for sim in simulations:
        segments = [e for e in sim.events if isinstance(e, Segment)]
        frames += [
            (round((offset_ms + s.arrived_ms) * 1e6), model_frame(s, connection_base))
            for s in segments
        ]
        if segments:
            offset_ms += max(s.arrived_ms for s in segments) + 1000.0  # a visible gap
            connection_base += max(s.connection for s in segments)
    return write_pcap(path, frames)


def model_frame(segment: Segment, connection_base: int = 0) -> bytes:
    """One model segment as the Ethernet frame the kernel would have put on lo."""
    client_port = CLIENT_PORT_BASE + connection_base + segment.connection
    from_client = segment.sender == "client"
    tcp = dpkt.tcp.TCP(
        sport=client_port if from_client else SERVER_PORT,
        dport=SERVER_PORT if from_client else client_port,
        seq=segment.seq % 2**32,
        ack=(segment.ack or 0) % 2**32,
        flags=sum(_FLAG_BITS[f] for f in segment.flags if f in _FLAG_BITS),
        win=65535,
        opts=_options(segment),
    )
    tcp.off = (20 + len(tcp.opts)) // 4  # the header's length in 32-bit words
    tcp.data = bytes(segment.length)
    ip = dpkt.ip.IP(src=LOOPBACK, dst=LOOPBACK, p=dpkt.ip.IP_PROTO_TCP, ttl=64, data=tcp)
    ip.len = len(ip)  # dpkt fills the checksums when the frame is packed
    frame = dpkt.ethernet.Ethernet(
        src=bytes(6), dst=bytes(6), type=dpkt.ethernet.ETH_TYPE_IP, data=ip
    )
    return bytes(frame)


def _options(segment: Segment) -> bytes:
    raw = b""
    ts_ms = round(segment.sent_ms) % 2**32
    for option in segment.options:
        if isinstance(option, Mss):
            raw += struct.pack("!BBH", 2, 4, option.value)
        elif isinstance(option, SackPermitted):
            raw += struct.pack("!BB", 4, 2)
        elif isinstance(option, Timestamps):
            raw += struct.pack("!BBII", 8, 10, ts_ms, 0)
        elif isinstance(option, WindowScale):
            raw += struct.pack("!BBBB", 1, 3, 3, option.shift)  # NOP, then the option
    if segment.cookie is not None:
        cookie = bytes.fromhex(segment.cookie.value_hex) if segment.cookie.value_hex else b""
        if segment.cookie.length and not cookie:
            cookie = bytes(segment.cookie.length)
        if segment.cookie.option_kind == 254:
            raw += struct.pack("!BBH", 254, 4 + len(cookie), TFO_EXPERIMENTAL_MAGIC) + cookie
        else:
            raw += struct.pack("!BB", 34, 2 + len(cookie)) + cookie
    return raw + b"\x01" * (-len(raw) % 4)
