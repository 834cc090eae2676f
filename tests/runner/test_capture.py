"""The packet capture (tfolab.runner.capture): decoding, numbering, pcap, and real runs.

Pure tests decode frames built by hand with dpkt. The real tests run inside a
throwaway namespace, in a subprocess (this file run as a module, like
nfrule_check.py): capture must happen inside the namespace, and pytest's own
process stays on the host. Each real scenario checks the capture against the
kernel's own count of segments sent (Tcp OutSegs in /proc/net/snmp of the
namespace): on lo every segment sent arrives once, so the two must agree.
"""

from __future__ import annotations

import ctypes
import itertools
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dpkt
import pytest

from tests.conftest import TIMING, LabMachine
from tests.environment import require_or_skip
from tests.timing import assert_in_band
from tfolab.runner import priority
from tfolab.runner.capture import (
    Capture,
    CapturedSegment,
    CaptureUnavailable,
    decode_frame,
    number_connections,
    pcap_frames,
    realtime_offset_ns,
    write_pcap,
)
from tfolab.runner.capture_delayer import DelayerCapture
from tfolab.runner.capture_ring import (
    BLOCK_DESC,
    SLL,
    SLL_AT,
    TPACKET3_HDR,
    parse_block,
    tcp_filter,
)

ROOT = Path(__file__).resolve().parents[2]
DELAY_MS = 10.0
BURST_WRITES = 1000
COOKIE = bytes.fromhex("0a1b2c3d4e5f6071")
CONTRACT_KEYS = {
    "t_ms", "connection", "sender", "flags", "seq", "ack", "length", "options", "window"
}  # fmt: skip

# ------------------------------------------------------------ frames built by hand

OPT_MSS = struct.pack("!BBH", 2, 4, 1460)
OPT_SACK_PERM = b"\x04\x02"
OPT_TS = struct.pack("!BBII", 8, 10, 1234, 0)
OPT_WSCALE = b"\x01\x03\x03\x07"  # NOP, wscale 7
TFO_REQUEST = b"\x22\x02"  # kind 34, length 2
TFO_COOKIE = bytes([34, 10]) + COOKIE
TFO_EXP_REQUEST = b"\xfe\x04\xf9\x89"  # kind 254, magic 0xF989
TFO_EXP_COOKIE = bytes([254, 12]) + b"\xf9\x89" + COOKIE


def pad4(opts: bytes) -> bytes:
    return opts + b"\x01" * (-len(opts) % 4)


def make_frame(
    flags: int,
    seq: int,
    ack: int = 0,
    payload: bytes = b"",
    opts: bytes = b"",
    sport: int = 40000,
    dport: int = 5000,
    src: str = "127.0.0.1",
    dst: str = "127.0.0.1",
) -> bytes:
    seq, ack = seq % 2**32, ack % 2**32
    tcp = dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq, ack=ack, flags=flags, win=65535)
    tcp.opts = pad4(opts)
    tcp.off = (20 + len(tcp.opts)) // 4
    tcp.data = payload
    ip = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=6, data=tcp)
    ip.len = 20 + len(bytes(tcp))
    eth = dpkt.ethernet.Ethernet(src=b"\0" * 6, dst=b"\0" * 6, type=0x0800, data=ip)
    return bytes(eth)


SYN, FIN, RST, PSH, ACK = 0x02, 0x01, 0x04, 0x08, 0x10


def seg(t_ms: float, frame: bytes) -> CapturedSegment:
    decoded = decode_frame(frame, int(t_ms * 1_000_000), 1_700_000_000_000_000_000)
    assert decoded is not None
    return decoded


def test_a_syn_decodes_every_option_the_model_names() -> None:
    opts = OPT_MSS + OPT_SACK_PERM + OPT_TS + OPT_WSCALE + TFO_REQUEST
    s = seg(0, make_frame(SYN, 1000, opts=opts))
    assert s.flags == ("SYN",) and s.ack_abs is None and s.length == 0
    assert s.options.labels == ("mss 1460", "sackOK", "TS", "wscale 7", "TFO cookie request")
    assert (s.options.mss, s.options.sack_permitted, s.options.wscale) == (1460, True, 7)
    assert (s.options.ts_val, s.options.ts_ecr) == (1234, 0)
    assert (
        s.options.tfo is not None and s.options.tfo.option_kind == 34 and s.options.tfo.is_request
    )


def test_fast_open_cookies_of_both_kinds() -> None:
    cookie = seg(0, make_frame(SYN | ACK, 5, 1, opts=OPT_MSS + TFO_COOKIE)).options
    assert cookie.tfo is not None and cookie.tfo.cookie_hex == "0a1b2c3d4e5f6071"
    assert cookie.labels == ("mss 1460", "TFO cookie 0a1b2c3d4e5f6071")
    exp_req = seg(0, make_frame(SYN, 5, opts=TFO_EXP_REQUEST)).options
    assert exp_req.tfo is not None and exp_req.tfo.option_kind == 254 and exp_req.tfo.is_request
    assert exp_req.labels == ("TFO cookie request (exp. kind 254)",)
    exp = seg(0, make_frame(SYN, 5, opts=TFO_EXP_COOKIE)).options
    assert exp.tfo is not None and exp.tfo.cookie_hex == COOKIE.hex()
    assert exp.labels == (f"TFO cookie {COOKIE.hex()} (exp. kind 254)",)
    # kind 254 without the Fast Open magic is some other experiment
    other = seg(0, make_frame(SYN, 5, opts=b"\xfe\x04\x12\x34")).options
    assert other.tfo is None and other.labels == ("opt 254",)


def test_flags_use_the_models_spelling_and_order() -> None:
    assert seg(0, make_frame(SYN | ACK, 1, 2)).flags == ("SYN", "ACK")
    assert seg(0, make_frame(FIN | ACK, 1, 2)).flags == ("FIN", "ACK")
    assert seg(0, make_frame(PSH | ACK, 1, 2, b"x")).flags == ("ACK", "PSH")
    assert seg(0, make_frame(RST, 1)).flags == ("RST",)


def test_length_is_what_the_ip_header_says_even_when_the_frame_was_cut() -> None:
    full = make_frame(PSH | ACK, 1, 1, b"x" * 3000)
    cut = decode_frame(full[:200], 0, wire_len=len(full))
    assert cut is not None and cut.length == 3000 and cut.wire_len == len(full)


def test_ipv6_tcp_decodes_too() -> None:
    tcp = dpkt.tcp.TCP(sport=1, dport=2, seq=5, flags=SYN, win=100, off=6, opts=OPT_MSS)
    tcp.data = b""
    ip6 = dpkt.ip6.IP6(src=b"\0" * 15 + b"\1", dst=b"\0" * 15 + b"\1", nxt=6, hlim=64, data=tcp)
    ip6.plen = len(bytes(tcp))
    frame = bytes(dpkt.ethernet.Ethernet(src=b"\0" * 6, dst=b"\0" * 6, type=0x86DD, data=ip6))
    s = decode_frame(frame, 0)
    assert s is not None and (s.src_addr, s.dst_port, s.flags) == ("::1", 2, ("SYN",))
    assert s.options.labels == ("mss 1460",) and s.length == 0


def test_the_clock_offset_maps_realtime_onto_monotonic() -> None:
    offset = realtime_offset_ns()
    assert abs(time.time_ns() - time.monotonic_ns() - offset) < 1_000_000


def test_what_is_not_tcp_is_none_and_garbage_raises() -> None:
    udp = dpkt.ip.IP(src=b"\x7f\0\0\x01", dst=b"\x7f\0\0\x01", p=17, data=dpkt.udp.UDP(data=b"x"))
    udp.len = len(bytes(udp))
    frame = bytes(dpkt.ethernet.Ethernet(src=b"\0" * 6, dst=b"\0" * 6, type=0x0800, data=udp))
    assert decode_frame(frame, 0) is None
    with pytest.raises(ValueError):
        decode_frame(b"\0" * 10, 0)
    with pytest.raises(ValueError):
        decode_frame(make_frame(SYN, 1)[:40], 0)  # the TCP header cut short


def fastopen_exchange(client_isn: int, server_isn: int) -> list[CapturedSegment]:
    """A TFO connection whose SYN carries 1420 of a 3000 B request (TCP-NOTES.md)."""
    c, s = client_isn, server_isn

    def back(flags: int, seq: int, ack: int, payload: bytes = b"") -> bytes:
        return make_frame(flags, seq, ack, payload, sport=5000, dport=40000)

    return [
        seg(10, make_frame(SYN, c, 0, b"q" * 1420, OPT_MSS + TFO_COOKIE)),
        seg(20, back(SYN | ACK, s, c + 1421)),
        seg(20.1, make_frame(PSH | ACK, c + 1421, s + 1, b"q" * 1580)),
        seg(30.1, back(ACK, s + 1, c + 3001)),
        seg(30.2, back(PSH | ACK, s + 1, c + 3001, b"r" * 16)),
        seg(40.2, make_frame(FIN | ACK, c + 3001, s + 17)),
    ]


@pytest.mark.parametrize("client_isn", [1_000_000, 2**32 - 700])  # the second wraps
def test_numbering_counts_from_each_isn_like_the_model(client_isn: int) -> None:
    rows = number_connections(fastopen_exchange(client_isn, 4_000_000_000), origin_ns=0)
    got = [(r.sender, r.flags, r.seq, r.ack, r.length) for r in rows]
    assert got == [
        ("client", ("SYN",), 0, None, 1420),
        ("server", ("SYN", "ACK"), 0, 1421, 0),
        # tcpdump would print seq 1:1581 here; the model (and tfolab) say 1421
        ("client", ("ACK", "PSH"), 1421, 1, 1580),
        ("server", ("ACK",), 1, 3001, 0),
        ("server", ("ACK", "PSH"), 1, 3001, 16),
        ("client", ("FIN", "ACK"), 3001, 17, 0),
    ]
    assert {r.connection for r in rows} == {1}


def test_rows_serialise_to_the_contracts_captured_shape() -> None:
    rows = number_connections(fastopen_exchange(7, 9), origin_ns=5_000_000)
    first = rows[0].to_row().to_json()
    assert set(first) == CONTRACT_KEYS
    assert first["t_ms"] == 5.0 and first["ack"] is None and first["flags"] == ["SYN"]
    assert first["options"] == ["mss 1460", "TFO cookie 0a1b2c3d4e5f6071"]
    json.dumps([r.to_row().to_json() for r in rows])


def test_connections_are_numbered_by_first_syn_and_a_reused_tuple_is_a_new_one() -> None:
    first = fastopen_exchange(100, 200)
    second = [
        seg(15, make_frame(SYN, 900, sport=40001)),
        seg(25, make_frame(SYN | ACK, 800, 901, sport=5000, dport=40001)),
    ]
    reused = [seg(50, make_frame(SYN, 555_555))]  # same 4-tuple as the first, new ISN
    rows = number_connections([*reused, *second, *first], origin_ns=0)  # any input order
    assert [(r.t_ms, r.connection, r.sender) for r in rows if "SYN" in r.flags] == [
        (10, 1, "client"),
        (15, 2, "client"),
        (20, 1, "server"),
        (25, 2, "server"),
        (50, 3, "client"),
    ]


def test_a_connection_caught_midway_numbers_its_first_bytes_from_one() -> None:
    rows = number_connections(fastopen_exchange(100, 200)[2:], origin_ns=0)
    assert [(r.sender, r.seq, r.ack) for r in rows][:2] == [("client", 1, 1), ("server", 1, 1581)]


def test_pcap_round_trip_keeps_frames_and_nanoseconds(tmp_path: Path) -> None:
    segments = fastopen_exchange(100, 200)
    frames = [(1_700_000_000_123_456_789 + i, s.frame) for i, s in enumerate(segments)]
    path = tmp_path / "capture.pcap"
    assert write_pcap(path, frames) == len(frames)
    with path.open("rb") as handle:
        reader = dpkt.pcap.Reader(handle)
        assert reader.datalink() == dpkt.pcap.DLT_EN10MB
        back = list(reader)
    assert [frame for _ts, frame in back] == [frame for _t, frame in frames]
    raw = path.read_bytes()
    assert struct.unpack_from("=I", raw)[0] == 0xA1B23C4D  # nanosecond pcap
    assert struct.unpack_from("=II", raw, 24) == (1_700_000_000, 123_456_789)
    assert pcap_frames(segments[:1]) == [(segments[0].t_realtime_ns, segments[0].frame)]


def tcpdump_text(path: Path) -> str:
    if shutil.which("tcpdump") is None:
        require_or_skip("tcpdump", "not installed: its reading of the pcap is not checked")
    done = subprocess.run(
        ["tcpdump", "-nn", "-r", str(path)], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    return re.sub(" +", " ", done.stdout)  # tcpdump writes "tfo  cookiereq"


def test_tcpdump_reads_the_fast_open_options(tmp_path: Path) -> None:
    path = tmp_path / "tfo.pcap"
    request = make_frame(SYN, 1, opts=OPT_MSS + TFO_REQUEST)
    cookie = make_frame(SYN | ACK, 9, 2, opts=OPT_MSS + TFO_COOKIE, sport=5000, dport=40000)
    write_pcap(path, [(1_000, request), (2_000, cookie)])
    text = tcpdump_text(path)
    assert "tfo cookiereq" in text and f"tfo cookie {COOKIE.hex()}" in text


# ------------------------------------------------------------ the ring, without a kernel


def test_the_filter_is_eleven_instructions_keeping_snaplen() -> None:
    program = tcp_filter(4096)
    assert len(program) == 11 * 8
    assert struct.unpack_from("=HBBI", program, 9 * 8) == (0x06, 0, 0, 4096)
    assert struct.unpack_from("=HBBI", program, 10 * 8) == (0x06, 0, 0, 0)


def ring_block(frames: list[tuple[int, bytes]]) -> bytes:
    """A TPACKET_V3 block as the kernel lays it out, holding `frames` (realtime ns, data)."""
    first, body = 48, b""
    for i, (t_ns, data) in enumerate(frames):
        mac = SLL_AT + 32
        size = (mac + len(data) + 15) // 16 * 16
        nxt = size if i < len(frames) - 1 else 0
        sec, nsec = divmod(t_ns, 1_000_000_000)
        hdr = TPACKET3_HDR.pack(nxt, sec, nsec, len(data), len(data), 1, mac, mac + 14)
        sll = SLL.pack(17, 8, 1, 772, 0, 6)
        body += (hdr.ljust(SLL_AT, b"\0") + sll).ljust(mac, b"\0") + data.ljust(size - mac, b"\0")
    desc = BLOCK_DESC.pack(1, 0, 1, len(frames), first, first + len(body), 1)
    return desc.ljust(first, b"\0") + body


def test_a_ring_block_is_read_frame_by_frame_and_skips_what_was_read() -> None:
    frames = [(1_000_000_123, make_frame(SYN, 1)), (2_000_000_456, make_frame(ACK, 2, 3))]
    block = ring_block(frames)
    read = parse_block(block)
    assert [(f.t_realtime_ns, f.data, f.hatype, f.pkttype) for f in read] == [
        (t, data, 772, 0) for t, data in frames
    ]
    assert [f.data for f in parse_block(block, skip=1)] == [frames[1][1]]


def test_an_unknown_interface_is_refused_with_the_reason() -> None:
    capture = Capture(interface="no-such-if0")
    with pytest.raises(CaptureUnavailable, match="no interface"):
        capture.start()
    assert not capture.running


# ------------------------------------------------------------ real runs, in a namespace


def run_inside(scenario: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.runner.test_capture", scenario, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if "unavailable" in result:
        require_or_skip("packet capture", result["unavailable"])
    return result


def check_counts(result: dict[str, Any]) -> None:
    """Nothing lost, nothing twice: the capture holds exactly the segments the kernel sent."""
    assert result["drops"] == 0 and result["lost"] == 0 and result["skipped"] == []
    assert result["notes"] == []  # lo's frames came as ARPHRD_LOOPBACK, read as Ethernet
    assert result["duplicate_frames"] == 0
    assert result["segments"] == result["out_segs"]


@TIMING
def test_a_connection_through_nfqueue_is_captured_once_at_arrival(
    lab_machine: LabMachine, tmp_path: Path
) -> None:
    if not lab_machine.nfqueue:
        require_or_skip("NFQUEUE", lab_machine.why_no_delay)
    pcap = tmp_path / "run.pcap"
    result = run_inside("nfqueue", str(pcap))
    check_counts(result)
    rows = result["plain"]
    req, resp = result["request_bytes"], result["response_bytes"]
    got = [(r["sender"], tuple(r["flags"]), r["seq"], r["ack"], r["length"]) for r in rows]
    assert got[:4] == [
        ("client", ("SYN",), 0, None, 0),
        ("server", ("SYN", "ACK"), 0, 1, 0),
        ("client", ("ACK",), 1, 1, 0),
        ("client", ("ACK", "PSH"), 1, 1, req),
    ]
    assert got[-1] == ("client", ("ACK",), req + 2, resp + 2, 0)  # the ACK of the server's FIN
    middle = got[4:-1]
    assert ("server", ("ACK", "PSH"), 1, req + 1, resp) in middle
    assert ("client", ("FIN", "ACK"), req + 1, resp + 1, 0) in middle
    assert ("server", ("FIN", "ACK"), resp + 1, req + 2, 0) in middle
    others = [g for g in middle if g[1] not in (("ACK", "PSH"), ("FIN", "ACK"))]
    assert all(g[1] == ("ACK",) and g[4] == 0 for g in others)  # pure ACKs only
    assert len(middle) - len(others) == 3
    times = [r["t_ms"] for r in rows]
    assert times == sorted(times)
    assert all(r["connection"] == 1 for r in rows)
    # Fast Open through the same capture: the kernel's own options, decoded.
    request_syn, cookie_syn = result["tfo_request_syn"], result["tfo_cookie_syn"]
    assert request_syn["options"][-1] == "TFO cookie request" and request_syn["length"] == 0
    cookie = result["tfo_synack_options"][-1]  # the SYN-ACK answers with the cookie ...
    assert re.fullmatch("TFO cookie [0-9a-f]{16}", cookie)
    assert cookie_syn["options"][-1] == cookie and cookie_syn["length"] > 0  # ... used next
    text = tcpdump_text(pcap)
    assert "tfo cookiereq" in text and "tfo cookie " in text
    # Stamped on arrival, after the delay: the SYN D after connect(), the SYN-ACK 2D.
    assert_in_band(times[0], DELAY_MS - 0.1, DELAY_MS + 1.0, "the SYN's stamp")
    assert_in_band(times[1], 2 * DELAY_MS - 0.1, 2 * DELAY_MS + 1.0, "the SYN-ACK's stamp")
    # Each row carries how late the delayer released it (--late-record-fd): never early,
    # and the SYN's stamp less it is its send (connect()) plus D.
    late = [r.get("late_ms", 0.0) for r in rows]
    assert all(0.0 < x < 50.0 for x in late), late
    assert_in_band(times[0] - late[0], DELAY_MS, DELAY_MS + 0.5, "the SYN's due time")


@pytest.mark.parametrize("ring", ["default", "small"])
def test_a_burst_of_a_thousand_segments_loses_none(lab_machine: LabMachine, ring: str) -> None:
    result = run_inside("burst", ring)
    assert result["realtime"] == priority.realtime_permitted()[0]  # as a run would measure
    check_counts(result)
    assert result["data_segments"] == BURST_WRITES
    assert result["data_seqs_contiguous"] is True
    if ring == "small":  # the ring holds a fraction of the burst: the reader thread drained it
        assert result["segments"] > 2 * result["ring_frames_capacity"]


def test_one_capture_serves_several_rounds_and_keeps_nothing_between(
    lab_machine: LabMachine,
) -> None:
    result = run_inside("rounds")
    for name in ("first", "second"):
        check_counts(result[name])
        assert result[name]["ports"] == [result[name]["expected_port"]]


def test_without_cap_net_raw_start_says_why() -> None:
    result = run_inside("refused")
    if "no_user_namespace" in result:
        require_or_skip("user namespaces", result["no_user_namespace"])
    # af_packet's packet_create asks ns_capable(net->user_ns, CAP_NET_RAW) with no
    # exception: a socket or a capture that went through here is a bug, never a skip.
    assert "not_refused" not in result, result["not_refused"]
    assert result["refused"].startswith("packet capture refused: opening an AF_PACKET socket")
    assert "CAP_NET_RAW" in result["refused"] and result["fix"]


# ------------------------------------------------------------ inside the namespace


def _enter_lab() -> None:
    from tfolab.core import lifetime
    from tfolab.runner import netns

    lifetime.die_with_parent()
    netns.enter_new_netns()
    netns.set_loopback(True)


def _out_segs() -> int:
    lines = Path("/proc/net/snmp").read_text().splitlines()
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("Tcp:"):
            return int(dict(zip(names.split(), values.split(), strict=True))["OutSegs"])
    raise RuntimeError("no Tcp line in /proc/net/snmp")


def _captured(
    capture: Capture | DelayerCapture, body: Callable[[], dict[str, object]]
) -> dict[str, object]:
    before = _out_segs()
    try:
        capture.start()
    except CaptureUnavailable as err:
        return {"unavailable": err.reason}
    extra = body()
    result = capture.stop()
    frames = [s.frame for s in result.segments]
    return {
        **extra,
        "segments": len(result.segments),
        "out_segs": _out_segs() - before,
        "drops": result.drops,
        "lost": result.lost,
        "skipped": list(result.skipped),
        "notes": list(result.notes),
        "duplicate_frames": len(frames) - len(set(frames)),
        "_segments": result.segments,
    }


def _exchange(request: bytes, response: bytes) -> tuple[int, int]:
    """connect, request, response, client closes, server closes; returns connect()'s time."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        client = socket.socket()
        started = time.monotonic_ns()  # CLOCK_MONOTONIC, like the native client's times
        client.connect(server.getsockname())
        conn, _ = server.accept()
        client.sendall(request)
        assert conn.recv(len(request)) == request
        conn.sendall(response)
        assert client.recv(len(response)) == response
        client.close()
        assert conn.recv(1) == b""
        conn.close()
        time.sleep(3 * DELAY_MS / 1000)  # the last ACK arrives D after the server's FIN
        return started, server.getsockname()[1]


def _fastopen(port_holder: list[int]) -> None:
    Path("/proc/sys/net/ipv4/tcp_fastopen").write_text("3")
    with socket.socket() as server:
        server.setsockopt(socket.IPPROTO_TCP, socket.TCP_FASTOPEN, 5)
        server.bind(("127.0.0.1", 0))
        server.listen()
        port_holder.append(server.getsockname()[1])
        for _ in range(2):  # the first asks for a cookie, the second carries it and data
            with socket.socket() as client:
                client.sendto(b"GET\n", socket.MSG_FASTOPEN, server.getsockname())
                conn, _ = server.accept()
                assert conn.recv(4) == b"GET\n"
                conn.sendall(b"OK\n")
                assert client.recv(3) == b"OK\n"
                conn.close()
            time.sleep(3 * DELAY_MS / 1000)


def inside_nfqueue(pcap_path: str) -> dict[str, object]:
    """The NFQUEUE backend as a run installs it: the rule at INPUT, tfo-delay recording
    what it releases, and its record as the capture (capture_delayer.py)."""
    from tfolab.core import native
    from tfolab.core.errors import UserError
    from tfolab.runner.backends.nfqueue import NFQUEUE
    from tfolab.runner.capture_delayer import DelayerCapture

    _enter_lab()
    try:
        tfo_delay = str(native.executable_path("tfo-delay"))
        installed = NFQUEUE.install(DELAY_MS, tfo_delay, record=True)
    except UserError as err:
        return {"unavailable": f"no NFQUEUE delay: {err.reason}"}
    assert installed.delayer is not None and installed.delayer.stdout is not None
    assert installed.record_fd is not None
    request, response = b"ping request\n", b"pong response, longer\n"
    times: dict[str, int] = {}
    ports: list[int] = []

    def body() -> dict[str, object]:
        times["plain"], plain_port = _exchange(request, response)
        ports.append(plain_port)
        _fastopen(ports)
        return {"request_bytes": len(request), "response_bytes": len(response)}

    capture = DelayerCapture(
        installed.delayer.pid,
        installed.delayer.stdout.fileno(),
        installed.record_fd,
        late_fd=installed.late_record_fd,
    )
    try:
        result = _captured(capture, body)
    finally:
        capture.close()
        installed.stop()
    if "unavailable" in result:
        return result
    segments: tuple[CapturedSegment, ...] = result.pop("_segments")  # type: ignore[assignment]
    write_pcap(pcap_path, pcap_frames(segments))
    rows = number_connections(segments, times["plain"])
    plain = [
        r.to_row().to_json() for r in rows if ports[0] in (r.segment.src_port, r.segment.dst_port)
    ]
    tfo = [r for r in rows if ports[1] in (r.segment.src_port, r.segment.dst_port)]
    syns = [r for r in tfo if r.flags == ("SYN",)]
    synacks = [r for r in tfo if r.flags == ("SYN", "ACK")]
    return {
        **result,
        "plain": plain,
        "tfo_request_syn": syns[0].to_row().to_json(),
        "tfo_cookie_syn": syns[1].to_row().to_json(),
        "tfo_synack_options": [o.label() for o in synacks[0].options],
    }


def inside_burst(ring: str) -> dict[str, object]:
    """BURST_WRITES small writes as fast as Python goes, spread over connections so that
    each stays within its initial congestion window and every write is a segment."""
    _enter_lab()
    small = ring == "small"
    capture = Capture(block_bytes=16384, blocks=4) if small else Capture()
    conns, writes_each = 100, BURST_WRITES // 100
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(conns)
    clients, accepted = [], []
    for _ in range(conns):
        client = socket.socket()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client.connect(server.getsockname())
        clients.append(client)
        accepted.append(server.accept()[0])

    def body() -> dict[str, object]:
        # As a measuring run holds its slot (runner/priority.py): every thread of the
        # process, the capture's drain thread included, at SCHED_FIFO 5 where permitted.
        # At normal priority another busy task on the machine can keep the drain thread
        # off the CPU long enough for the small ring to overflow (seen: 634 drops).
        realtime = priority.prefer_realtime()
        try:
            for i in range(writes_each):
                for client in clients:
                    client.send(b"%09d\n" % i)
            for conn in accepted:
                received = b""
                while len(received) < 10 * writes_each:
                    received += conn.recv(65536)
            time.sleep(0.01)
        finally:
            priority.normal_scheduling()
        return {"realtime": realtime}

    result = _captured(capture, body)
    capture.close()
    if "unavailable" in result:
        return result
    segments: tuple[CapturedSegment, ...] = result.pop("_segments")  # type: ignore[assignment]
    data = [s for s in segments if s.length]
    by_conn: dict[int, list[int]] = {}
    for s in data:
        by_conn.setdefault(s.src_port, []).append(s.seq_abs)
    contiguous = all(
        len(seqs) == writes_each and all(b - a == 10 for a, b in itertools.pairwise(seqs))
        for seqs in by_conn.values()
    )
    return {
        **result,
        "data_segments": len(data),
        "data_seqs_contiguous": contiguous and all(s.length == 10 for s in data),
        "ring_frames_capacity": 4 * 16384 // 160,
    }


def inside_rounds() -> dict[str, object]:
    """Round one, a connection while stopped, round two: each round holds only its own."""
    _enter_lab()
    capture = Capture()
    try:
        capture.open()
    except CaptureUnavailable as err:
        return {"unavailable": err.reason}
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(5)

        def connection() -> int:
            with socket.socket() as client:
                client.connect(server.getsockname())
                port: int = client.getsockname()[1]
                conn, _ = server.accept()
                client.sendall(b"x")
                assert conn.recv(1) == b"x"
                conn.close()
            time.sleep(0.01)
            return port

        rounds: dict[str, object] = {}
        connection()  # after open(), before any start(): not kept
        for name in ("first", "second"):
            result = _captured(capture, lambda: {"expected_port": connection()})
            found = result.pop("_segments")
            assert isinstance(found, tuple)
            result["ports"] = sorted({s.src_port for s in found} - {server.getsockname()[1]})
            rounds[name] = result
            connection()  # between rounds: not kept
    capture.close()
    return rounds


def inside_refused() -> dict[str, object]:
    """A user namespace of our own, on the network namespace we were in: packet sockets there
    need CAP_NET_RAW over that network namespace, which the new user namespace lacks."""
    from tfolab.core import lifetime
    from tfolab.runner import netns

    lifetime.die_with_parent()
    if netns._libc.unshare(netns.CLONE_NEWUSER) != 0:
        why = os.strerror(ctypes.get_errno())
        return {"no_user_namespace": f"unshare(CLONE_NEWUSER) failed ({why})"}
    try:  # protocol 0 receives nothing: this probe can never see the host's packets
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0).close()
    except PermissionError:
        pass
    else:
        return {"not_refused": "AF_PACKET sockets are allowed without CAP_NET_RAW"}
    try:
        Capture().start()
    except CaptureUnavailable as err:
        return {"refused": err.reason, "fix": err.fix}
    return {"not_refused": "Capture().start() went through"}


if __name__ == "__main__":
    SCENARIOS: dict[str, Callable[..., dict[str, object]]] = {
        "nfqueue": inside_nfqueue,
        "burst": inside_burst,
        "rounds": inside_rounds,
        "refused": inside_refused,
    }
    print(json.dumps(SCENARIOS[sys.argv[1]](*sys.argv[2:]), default=str))


def test_a_replayed_syn_is_a_new_connection_and_old_numbers_stay_with_the_old_one() -> None:
    """The replay scenario: same ISN again after a SYN-ACK; TIME_WAIT ACKs and the RSTs
    answering them carry the first connection's numbers (the server's new ISN is later)."""
    c, old, new = 1000, 50_000, 2_000_000

    def back(flags: int, seq: int, ack: int, payload: bytes = b"") -> bytes:
        return make_frame(flags, seq, ack, payload, sport=5000, dport=40000)

    segments = [
        seg(10, make_frame(SYN, c, 0, b"q" * 16, OPT_MSS + TFO_COOKIE)),
        seg(20, back(SYN | ACK, old, c + 17)),
        seg(20.1, back(PSH | ACK, old + 1, c + 17, b"r" * 16)),
        seg(30, make_frame(FIN | ACK, c + 17, old + 17)),
        seg(40, back(FIN | ACK, old + 17, c + 18)),
        seg(50, make_frame(ACK, c + 18, old + 18)),
        seg(100, make_frame(SYN, c, 0, b"q" * 16, OPT_MSS + TFO_COOKIE)),  # the replay
        seg(110, back(SYN | ACK, new, c + 17)),
        seg(110.1, back(PSH | ACK, new + 1, c + 17, b"r" * 16)),
        seg(120, make_frame(ACK, c + 18, old + 18)),  # TIME_WAIT's ACK
        seg(130, back(RST, old + 18, 0)),  # tcp_v4_send_reset: seq = that ack
        seg(140, make_frame(RST, c + 17, 0)),  # no socket: answers the new child
    ]
    rows = number_connections(segments, origin_ns=0)
    got = [(r.connection, r.sender, r.flags, r.seq, r.ack) for r in rows[6:]]
    assert got == [
        (2, "client", ("SYN",), 0, None),
        (2, "server", ("SYN", "ACK"), 0, 17),
        (2, "server", ("ACK", "PSH"), 1, 17),
        (1, "client", ("ACK",), 18, 18),
        (1, "server", ("RST",), 18, None),
        (2, "client", ("RST",), 17, None),
    ]


def test_a_syn_sent_again_before_the_clients_ack_stays_in_its_connection() -> None:
    """D = 600 ms: the client's SYN timer fires before the SYN-ACK arrives, so the server
    sees the SYN again after answering it; the client has sent nothing else yet, so it
    is the same connection (the SYN sent again), not a replay."""
    c, s = 1000, 50_000

    def back(flags: int, seq: int, ack: int, payload: bytes = b"") -> bytes:
        return make_frame(flags, seq, ack, payload, sport=5000, dport=40000)

    segments = [
        seg(600, make_frame(SYN, c, 0, b"", OPT_MSS)),
        seg(1200, back(SYN | ACK, s, c + 1)),
        seg(1625, make_frame(SYN, c, 0, b"", OPT_MSS)),  # the SYN again
        seg(1800, make_frame(ACK, c + 1, s + 1)),
        seg(2225, back(SYN | ACK, s, c + 1)),  # the SYN-ACK again
        seg(2825, make_frame(ACK, c + 1, s + 1)),  # the challenge ACK
    ]
    rows = number_connections(segments, origin_ns=0)
    assert {r.connection for r in rows} == {1}
    assert [(r.sender, r.flags, r.seq) for r in rows][2] == ("client", ("SYN",), 0)
