"""The client's --read-whole reader: one read per answer, and ACK windows that repeat.

A reader that copies while a slow-start flight still arrives changes the windows
its ACKs advertise by when the scheduler ran it (domain.reader_race_refusal). With
SO_RCVLOWAT set to the whole answer, tcp_data_ready wakes it only once all of it is
in, so every ACK's window follows from the arrivals alone. Checked for real: three
connections each read a 100,000-byte answer at D = 10 ms (the NFQUEUE delayer at
the receiving end, as a run installs it); the client's segments (flags, window)
are the same on all three, and the whole answer came in one read.
"""

from __future__ import annotations

import json
import shutil
import socket
import struct
import subprocess

import pytest

from tests.environment import require_or_skip
from tests.native.netns import run_in_netns
from tests.native.support import echo_server
from tests.timing import assert_in_band
from tfolab.core import native
from tfolab.core.kernel import kernel_release, kernel_version
from tfolab.runner.backends import install_delay

ANSWER_BYTES = 100_000
CONNECTIONS = 3
ETH_P_ALL = 0x0003
SO_RCVBUFFORCE = 33
FIN = 0x01

# (flags, window field) of each segment the client sent, per connection
Signature = tuple[tuple[int, int], ...]


def _client_segments(frames: list[bytes], server_port: int) -> dict[int, Signature]:
    """Each client port's (TCP flags, window) in send order up to its FIN, from lo's
    outgoing frames."""
    seen: dict[int, list[tuple[int, int]]] = {}
    for frame in frames:
        ip = frame[14:]
        tcp = ip[(ip[0] & 15) * 4 :]
        source, destination = struct.unpack("!HH", tcp[:4])
        if destination == server_port:
            window = struct.unpack("!H", tcp[14:16])[0]
            seen.setdefault(source, []).append((tcp[13], window))
    # up to the client's FIN: the ACK of the server's FIN comes after the client returned
    ends = {
        port: next(k for k, (flags, _) in enumerate(rows) if flags & FIN)
        for port, rows in seen.items()
    }
    return {port: tuple(rows[: ends[port] + 1]) for port, rows in seen.items()}


def _outgoing_frames(capture: socket.socket) -> list[bytes]:
    """What lo sent, as the capture socket holds it now (without waiting for more)."""
    capture.setblocking(False)
    frames: list[bytes] = []
    while True:
        try:
            frame, address = capture.recvfrom(1 << 17)
        except BlockingIOError:
            return frames
        if address[2] == socket.PACKET_OUTGOING:
            frames.append(frame)


def _three_answers(mtu: int) -> tuple[list[native.Sample], dict[int, Signature], str]:
    subprocess.run(["ip", "link", "set", "lo", "mtu", str(mtu)], check=True, timeout=10)
    delayer = native.optional_executable("tfo-delay")
    if delayer is None:
        require_or_skip("tfo-delay", "the bundled delayer is not built")
    installed = install_delay("nfqueue", 10.0, str(delayer))
    capture = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    frames: list[bytes] = []
    try:
        capture.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
        capture.bind(("lo", 0))
        flags = ("--mode", "line", "--response-bytes", str(ANSWER_BYTES), "--congestion", "cubic")
        with echo_server(*flags) as (_, port):
            samples = native.run_client(
                native.ClientOptions(
                    port=port,
                    response_bytes=ANSWER_BYTES,
                    read_whole=True,
                    connections=CONNECTIONS,
                    congestion="cubic",
                )
            )
        frames = _outgoing_frames(capture)
    finally:
        capture.close()
        statistics = installed.stop()
    return samples, _client_segments(frames, port), statistics


# Measured on 6.18 (the host): every connection's segments repeat. In CI's VM (6.1,
# software emulation) the last flight's ACKs differed between connections in 3 runs of 3
# (TCP-NOTES, "A reader that waits for the whole answer"); not yet explained, so the
# claim is checked only where it was shown.
REPEATS_FROM = (6, 6)


def _skip_where_not_shown() -> None:
    if kernel_version() < REPEATS_FROM:
        pytest.skip(
            f"repeatable windows were shown on Linux 6.18, not on {kernel_release()}: in "
            "CI's 6.1 VM the last flight's ACKs differed between connections (TCP-NOTES)"
        )


def test_a_whole_answer_reader_reads_once_and_its_acks_repeat() -> None:
    if shutil.which("ip") is None:
        require_or_skip("ip", "iproute2 sets the namespace's MTU")
    samples, by_port, statistics = run_in_netns(_three_answers, 1500, timeout=60.0)
    delayer = json.loads(statistics)
    assert delayer["lost"] == delayer["kernel_queue_dropped"] == 0, delayer
    assert [s.error for s in samples] == [None] * CONNECTIONS
    assert len(by_port) == CONNECTIONS
    signatures = list(by_port.values())
    # a real transfer: the handshake's ACK, then ACKs of a slow start, then the FIN
    assert all(len(signature) >= 10 for signature in signatures), signatures
    for sample in samples:
        # one read: its first and last byte are stamped around the same recv(), where a
        # reader that copies as the answer arrives spans its slow-start rounds (20 ms each)
        spread_ms = (sample.last_byte_ns - sample.first_byte_ns) / 1e6
        assert_in_band(spread_ms, 0.0, 5.0, "first to last byte of one answer")
    _skip_where_not_shown()
    assert signatures[1:] == signatures[:1] * (CONNECTIONS - 1), signatures


def test_a_whole_answer_reader_is_not_stuck_when_the_window_closes_first() -> None:
    # At lo's MTU the first window (64 KiB) closes before the answer is in: the kernel
    # wakes the reader early (tcp_epollin_ready: at most one MSS of window left); it
    # reads part and waits for the rest. A blocking recv() would wait for its whole
    # low-water mark, which never comes, until its 5 s timeout.
    if shutil.which("ip") is None:
        require_or_skip("ip", "iproute2 sets the namespace's MTU")
    samples, by_port, _ = run_in_netns(_three_answers, 65536, timeout=60.0)
    assert [s.error for s in samples] == [None] * CONNECTIONS
    for sample in samples:
        # the answer's last byte in round trips of 20 ms, never a 5 s timeout
        assert_in_band(sample.round_ms, 40.0, 1000.0, "request to the answer's last byte")
    _skip_where_not_shown()
    signatures = list(by_port.values())
    assert signatures[1:] == signatures[:1] * (CONNECTIONS - 1), signatures


def _syn_windows(fastopen: str) -> list[int]:
    """The window field of each SYN a --read-whole client sends for a 100 kB answer."""
    subprocess.run(["ip", "link", "set", "lo", "mtu", "1500"], check=True, timeout=10)
    capture = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    windows: list[int] = []
    try:
        capture.bind(("lo", 0))
        flags = ("--mode", "line", "--response-bytes", str(ANSWER_BYTES))
        with echo_server(*flags) as (_, port):
            samples = native.run_client(
                native.ClientOptions(
                    port=port, response_bytes=ANSWER_BYTES, read_whole=True, fastopen=fastopen
                )
            )
        assert [s.error for s in samples] == [None]
        for frame in _outgoing_frames(capture):
            tcp = frame[14 + (frame[14] & 15) * 4 :]
            destination, flags_byte = struct.unpack("!H", tcp[2:4])[0], tcp[13]
            if destination == port and flags_byte & 2:
                windows.append(struct.unpack("!H", tcp[14:16])[0])
    finally:
        capture.close()
    return windows


def test_a_fast_open_client_sets_its_mark_before_the_syn() -> None:
    """A plain client sets a mark above half the buffer after the handshake: its SYN
    offers the usual window. A Fast Open client, whose answer may follow the SYN-ACK
    at once, sets it before connect(): from 6.6 tcp_set_rcvlowat grows sk_rcvbuf there
    (no clamp yet), and the SYN offers the larger window (capped at 65535)."""
    if shutil.which("ip") is None:
        require_or_skip("ip", "iproute2 sets the namespace's MTU")
    if kernel_version() < (6, 6):
        pytest.skip(
            f"before 6.6 the mark before connect() sets the window clamp too, so the "
            f"model refuses Fast Open whole answers there (domain.py); on {kernel_release()}"
        )
    assert run_in_netns(_syn_windows, "off", timeout=30.0) == [64240]
    assert run_in_netns(_syn_windows, "connect", timeout=30.0) == [65535]
