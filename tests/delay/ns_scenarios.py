"""Scenarios for the tfo-delay tests, run INSIDE a fresh network namespace.

The tests start this file as ``unshare --net -- python ns_scenarios.py NAME
--binary PATH ...``; it brings the namespace's lo up, installs the NFQUEUE
rules there (never on the host), runs one scenario against the real kernel and
prints one JSON object on stdout for the test to judge.  Nothing here asserts:
the verdicts belong to the tests.

The scenario process runs SCHED_FIFO 5 when allowed (below the delayer's 10),
so a busy machine delays neither the delayer nor the measurement.

Rules: every wait is bounded (socket timeouts, subprocess timeouts, bounded
loops); the delayer is always stopped (SIGTERM, then SIGKILL) before exit.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import itertools
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from tfolab.runner.backends.nfqueue import delayer_args
from tfolab.runner.backends.nfrule import RuleRefused, install_rule
from tfolab.runner.netns import set_loopback

QUEUE = 7
PR_CAPBSET_DROP, CAP_NET_ADMIN = 24, 12


def add_rule(protocol: str, queue: int = QUEUE) -> None:
    try:
        install_rule(queue, protocol)
    except RuleRefused as err:
        raise SystemExit(f"cannot install the NFQUEUE rule: {err}") from None


class Delayer:
    """tfo-delay as a child: started, waited for READY, stopped with its output kept."""

    def __init__(
        self,
        binary: str,
        delay_ms: float,
        queue: int = QUEUE,
        extra: tuple[str, ...] = (),
        pass_fds: tuple[int, ...] = (),
        control: bool = False,
    ) -> None:
        self.proc = subprocess.Popen(
            [*delayer_args(binary, delay_ms, queue), *extra],
            stdin=subprocess.PIPE if control else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            pass_fds=pass_fds,
        )
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 10.0)
        self.ready = (self.proc.stdout.readline().strip() if ready else "") == "READY"
        self.returncode: int | None = None
        self.stdout = self.stderr = ""

    def say(self, line: str) -> str:
        """One control line (--control), and the delayer's answer to it."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], 5.0)
        return self.proc.stdout.readline().strip() if ready else ""

    def stop(self, sig: int = signal.SIGTERM) -> dict:
        if self.returncode is None:
            self.proc.send_signal(sig)
            try:
                self.stdout, self.stderr = self.proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.stdout, self.stderr = self.proc.communicate(timeout=10)
            self.returncode = self.proc.returncode
        stats = [ln for ln in self.stdout.splitlines() if ln.startswith("{")]
        return {
            "returncode": self.returncode,
            "ready": self.ready,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "stats": json.loads(stats[-1]) if stats else None,
        }


def ms_since(start_ns: int) -> float:
    return (time.monotonic_ns() - start_ns) / 1e6


def tcp_pair(listener: socket.socket) -> tuple[socket.socket, socket.socket, float]:
    client = socket.socket()
    client.settimeout(5)
    t0 = time.monotonic_ns()
    client.connect(listener.getsockname())
    connect_ms = ms_since(t0)
    server, _ = listener.accept()
    server.settimeout(5)
    for s in (client, server):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return client, server, connect_ms


def echo_ms(client: socket.socket, server: socket.socket) -> float:
    """A 4-byte echo's round trip, each end polling without sleeping: what is measured
    is the path through the delayer, not how fast the host wakes a sleeping reader (a
    few tenths of a ms each after 25 ms asleep here, which a 1 ms median band is not
    for: the lab's comparison measures the applications' wake-ups apart, app_wakes)."""
    t0 = time.monotonic_ns()
    client.send(b"ping")
    data = _spin_recv(server)
    server.send(data)
    _spin_recv(client)
    return ms_since(t0)


def _spin_recv(sock: socket.socket, timeout_s: float = 5.0) -> bytes:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            return sock.recv(64, socket.MSG_DONTWAIT)
        except BlockingIOError:
            continue
    raise TimeoutError("nothing arrived within 5 s")


def listener_socket() -> socket.socket:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.settimeout(5)
    return listener


# ---------------------------------------------------------------------------- scenarios


def scenario_timing(args: argparse.Namespace) -> dict:
    """connect() and an echo round trip through the delayer, `iterations` times."""
    add_rule("tcp")
    delayer = Delayer(args.binary, args.delay_ms)
    if not delayer.ready:
        return {"error": "delayer not ready", **delayer.stop()}
    listener = listener_socket()
    settle = 3 * args.delay_ms / 1e3 + 0.01
    connects, echoes = [], []
    for _ in range(args.iterations):
        client, server, connect_ms = tcp_pair(listener)
        connects.append(connect_ms)
        time.sleep(settle)  # the handshake's last ACK has gone through
        echoes.append(echo_ms(client, server))
        client.close()
        server.close()
        time.sleep(settle)  # FINs and their ACKs have gone through
    listener.close()
    return {"connect_ms": connects, "echo_ms": echoes, **delayer.stop()}


def scenario_release(args: argparse.Namespace) -> dict:
    """SIGTERM while a stream of UDP is held for a long delay: everything arrives."""
    add_rule("udp")
    delayer = Delayer(args.binary, args.delay_ms)
    if not delayer.ready:
        return {"error": "delayer not ready", **delayer.stop()}
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), 8 << 20)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx.connect(rx.getsockname())
    sent = 0
    stop_sending = threading.Event()

    def send_stream() -> None:
        nonlocal sent
        deadline = time.monotonic() + 5
        while not stop_sending.is_set() and time.monotonic() < deadline:
            tx.send(struct.pack("!I", sent))
            sent += 1
            time.sleep(0.0002)

    sender = threading.Thread(target=send_stream)
    sender.start()
    time.sleep(args.stream_s / 2)
    term_ns = time.monotonic_ns()
    stopped = delayer.stop()
    stop_ms = ms_since(term_ns)
    time.sleep(args.stream_s / 2)  # keep sending after the delayer is gone
    stop_sending.set()
    sender.join(timeout=10)
    seqs = []
    rx.settimeout(0.5)
    for _ in range(sent):
        try:
            seqs.append(struct.unpack("!I", rx.recv(16))[0])
        except TimeoutError:
            break
    overtaken = [a for a, b in itertools.pairwise(seqs) if b < a]
    return {
        "sent": sent,
        "received": len(seqs),
        "in_order": seqs == sorted(seqs),
        "inversions": len(overtaken),
        "inversion_at": overtaken[:5],
        "seqs": seqs,
        "unique": len(set(seqs)),
        "stop_ms": stop_ms,
        "all_read_ms": ms_since(term_ns),
        **stopped,
    }


def scenario_kill(args: argparse.Namespace) -> dict:
    """SIGKILL the delayer: with --queue-bypass traffic flows again, undelayed."""
    add_rule("tcp")
    delayer = Delayer(args.binary, args.delay_ms)
    if not delayer.ready:
        return {"error": "delayer not ready", **delayer.stop()}
    listener = listener_socket()
    old_client, old_server, before_ms = tcp_pair(listener)
    time.sleep(3 * args.delay_ms / 1e3)
    stopped = delayer.stop(signal.SIGKILL)
    client, server, after_ms = tcp_pair(listener)
    fresh_echo = echo_ms(client, server)
    old_echo = echo_ms(old_client, old_server)
    for s in (client, server, old_client, old_server, listener):
        s.close()
    return {
        "connect_before_ms": before_ms,
        "connect_after_ms": after_ms,
        "echo_after_ms": fresh_echo,
        "old_connection_echo_ms": old_echo,
        **stopped,
    }


def scenario_busy(args: argparse.Namespace) -> dict:
    """A second delayer on a queue that is already bound."""
    first = Delayer(args.binary, args.delay_ms)
    second = subprocess.run(
        [args.binary, "--queue", str(QUEUE), "--delay-ms", "1"],
        capture_output=True,
        text=True,
        timeout=10,
    )
    return {
        "second_returncode": second.returncode,
        "second_stderr": second.stderr,
        "second_stdout": second.stdout,
        "first": first.stop(),
    }


def scenario_eperm(args: argparse.Namespace) -> dict:
    """Root without CAP_NET_ADMIN (dropped from the bounding set) cannot bind."""
    libc = ctypes.CDLL(None, use_errno=True)

    def drop_net_admin() -> None:
        if libc.prctl(PR_CAPBSET_DROP, CAP_NET_ADMIN, 0, 0, 0) != 0:
            os._exit(99)

    done = subprocess.run(
        [args.binary, "--queue", str(QUEUE), "--delay-ms", "1"],
        capture_output=True,
        text=True,
        timeout=10,
        preexec_fn=drop_net_admin,
    )
    return {"returncode": done.returncode, "stderr": done.stderr, "stdout": done.stdout}


def scenario_overflow(args: argparse.Namespace) -> dict:
    """--max-queue 10 and 50 datagrams back to back: the kernel refuses 40."""
    add_rule("udp")
    extra = ("--max-queue", "10", *(("--fail-open",) if args.fail_open else ()))
    delayer = Delayer(args.binary, args.delay_ms, extra=extra)
    if not delayer.ready:
        return {"error": "delayer not ready", **delayer.stop()}
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx.connect(rx.getsockname())
    start = time.monotonic_ns()
    for seq in range(50):
        tx.send(struct.pack("!I", seq))
    rx.settimeout(3 * args.delay_ms / 1e3 + 0.5)
    arrivals = []
    for _ in range(50):
        try:
            seq = struct.unpack("!I", rx.recv(16))[0]
        except TimeoutError:
            break
        arrivals.append((seq, ms_since(start)))
    return {"arrivals": arrivals, **delayer.stop()}


def scenario_record(args: argparse.Namespace) -> dict:
    """--record-fd into a memory file: 40 datagrams, each carrying its send time
    (CLOCK_MONOTONIC ns); SIGUSR1 writes the records, the stop the rest; and with
    --late-record-fd each record's lateness beside it."""
    add_rule("udp")
    record = os.memfd_create("record")
    late = os.memfd_create("late")
    delayer = Delayer(
        args.binary,
        args.delay_ms,
        extra=("--record-fd", str(record), "--late-record-fd", str(late)),
        pass_fds=(record, late),
    )
    if not delayer.ready:
        return {"error": "delayer not ready", **delayer.stop()}
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.settimeout(3 * args.delay_ms / 1e3 + 1)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx.connect(rx.getsockname())
    for _ in range(40):
        tx.send(struct.pack("=q", time.monotonic_ns()))
        time.sleep(0.0005)
    for _ in range(40):
        rx.recv(16)
    assert delayer.proc.stdout is not None
    delayer.proc.send_signal(signal.SIGUSR1)
    ready, _, _ = select.select([delayer.proc.stdout], [], [], 5.0)
    flushed = delayer.proc.stdout.readline().strip() if ready else ""
    flushed_bytes = os.fstat(record).st_size
    flushed_late_bytes = os.fstat(late).st_size
    tx.send(struct.pack("=q", time.monotonic_ns()))  # one more, written at the stop
    rx.recv(16)
    stopped = delayer.stop()
    data = os.pread(record, os.fstat(record).st_size, 0)
    late_data = os.pread(late, os.fstat(late).st_size, 0)
    os.close(record)
    os.close(late)
    return {
        "flushed": flushed,
        "flushed_bytes": flushed_bytes,
        "flushed_late_bytes": flushed_late_bytes,
        "pcap_hex": data.hex(),
        "late_hex": late_data.hex(),
        **stopped,
    }


def scenario_drop(args: argparse.Namespace) -> dict:
    """--control: a plan that drops the client's first packet (its SYN), so connect()
    waits for the SYN's retransmission; the dropped packet recorded, stamped when its
    delay ended;
    a bad plan refused with the one before kept in force; the same plan again, which
    leaves the open connection's echo alone and drops the next connection's SYN; then a
    plan of nothing."""
    add_rule("tcp")
    dropped = os.memfd_create("dropped")
    delayer = Delayer(
        args.binary,
        args.delay_ms,
        extra=("--control", "--drop-record-fd", str(dropped)),
        pass_fds=(dropped,),
        control=True,
    )
    if not delayer.ready:
        return {"error": "delayer not ready", **delayer.stop()}
    listener = listener_socket()
    port = listener.getsockname()[1]
    answers = [delayer.say(f"DROP {port} client:1")]
    t0 = time.monotonic_ns()
    client, server, connect_ms = tcp_pair(listener)
    echo = echo_ms(client, server)
    for bad in (
        "DROP 0 client:1",
        f"DROP {port} client:0",
        f"DROP {port} client:1,",
        f"DROP {port} client:1,client:1",
        "HELLO",
        f"DROP {port} " + "x" * 2000,
    ):
        answers.append(delayer.say(bad))
    # a plan is for the next connection: the earlier one's packets are not counted
    answers.append(delayer.say(f"DROP {port} client:1"))
    echo_before_next = echo_ms(client, server)
    second, server_second, connect_second_ms = tcp_pair(listener)
    answers.append(delayer.say(f"DROP {port} -"))
    again, server_again, connect_again_ms = tcp_pair(listener)
    for sock in (client, server, second, server_second, again, server_again, listener):
        sock.close()
    assert delayer.proc.stdout is not None
    delayer.proc.send_signal(signal.SIGUSR1)
    ready, _, _ = select.select([delayer.proc.stdout], [], [], 5.0)
    flushed = delayer.proc.stdout.readline().strip() if ready else ""
    stopped = delayer.stop()
    data = os.pread(dropped, os.fstat(dropped).st_size, 0)
    os.close(dropped)
    return {
        "answers": answers,
        "port": port,
        "connect_ms": connect_ms,
        "echo_ms": echo,
        "connect_again_ms": connect_again_ms,
        "echo_before_next_ms": echo_before_next,
        "connect_second_ms": connect_second_ms,
        "started_ns": t0,
        "flushed": flushed,
        "pcap_hex": data.hex(),
        **stopped,
    }


def scenario_drop_overlap(args: argparse.Namespace) -> dict:
    """A connection's plan outlives the next plan: plan A names connection 1's fourth
    client packet, plan B (nothing) begins connection 2, and then connection 1 sends
    its third and fourth packets (two writes): the fourth is dropped, so it reaches the
    server only with its tail-loss probe, 200 ms or more later."""
    add_rule("tcp")
    delayer = Delayer(args.binary, args.delay_ms, extra=("--control",), control=True)
    if not delayer.ready:
        return {"error": "delayer not ready", **delayer.stop()}
    listener = listener_socket()
    port = listener.getsockname()[1]
    answers = [delayer.say(f"DROP {port} client:4")]
    first, server_first, _ = tcp_pair(listener)  # client packets 1 (SYN) and 2 (ACK)
    answers.append(delayer.say(f"DROP {port} -"))
    second, server_second, _ = tcp_pair(listener)
    second_echo = echo_ms(second, server_second)
    first.send(b"a")  # client packet 3
    server_first.recv(64)
    t0 = time.monotonic_ns()
    first.send(b"b")  # client packet 4: plan A's
    server_first.recv(64)
    fourth_ms = ms_since(t0)
    for sock in (first, server_first, second, server_second, listener):
        sock.close()
    return {
        "answers": answers,
        "second_echo_ms": second_echo,
        "fourth_ms": fourth_ms,
        **delayer.stop(),
    }


def _tfo_exchange(listener: socket.socket) -> float:
    """One Fast Open connection (sendto with MSG_FASTOPEN: data in the SYN where a cookie
    is cached, else a cookie request), its request echoed; ms from sendto to the echo."""
    client = socket.socket()  # blocking: sendto waits for the handshake (a timeout would
    t0 = time.monotonic_ns()  # make it non-blocking, and MSG_FASTOPEN answer EINPROGRESS)
    client.sendto(b"ping", socket.MSG_FASTOPEN, listener.getsockname())
    client.settimeout(5)
    server, _ = listener.accept()
    server.settimeout(5)
    server.send(server.recv(64))
    client.recv(64)
    took = ms_since(t0)
    client.close()
    server.close()
    return took


def _tcpext(name: str) -> int:
    lines = Path("/proc/net/netstat").read_text().splitlines()
    for header, values in zip(lines[::2], lines[1::2], strict=False):
        if header.startswith("TcpExt:"):
            return dict(zip(header.split()[1:], map(int, values.split()[1:]), strict=False))[name]
    return 0


def scenario_middlebox(args: argparse.Namespace) -> dict:
    """--control "MIDDLEBOX PORT MODE", with Fast Open on in this namespace: bad lines
    refused; strip-tfo-option lets a cookie request through without its option (the
    server counts no cookie request; the connection works, so both checksums are right);
    drop-tfo-syn drops the cookie request (connect pays the SYN timer); with a cookie
    learnt under none, drop-syn-data drops the SYN-data (the SYN timer again)."""
    add_rule("tcp")
    Path("/proc/sys/net/ipv4/tcp_fastopen").write_text("3\n")  # this namespace's only
    dropped = os.memfd_create("dropped")
    delayer = Delayer(
        args.binary,
        args.delay_ms,
        extra=("--control", "--drop-record-fd", str(dropped)),
        pass_fds=(dropped,),
        control=True,
    )
    if not delayer.ready:
        return {"error": "delayer not ready", **delayer.stop()}
    listener = listener_socket()
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_FASTOPEN, 16)
    port = listener.getsockname()[1]
    answers = [
        delayer.say(line)
        for line in (
            f"MIDDLEBOX {port} drop-everything",
            "MIDDLEBOX 0 none",
            f"MIDDLEBOX {port}",
            f"MIDDLEBOX {port} strip-tfo-option",
        )
    ]
    reqd_before = _tcpext("TCPFastOpenCookieReqd")
    stripped_ms = _tfo_exchange(listener)
    reqd_stripped = _tcpext("TCPFastOpenCookieReqd") - reqd_before
    answers.append(delayer.say(f"MIDDLEBOX {port} drop-tfo-syn"))
    dropped_request_ms = _tfo_exchange(listener)
    answers.append(delayer.say(f"MIDDLEBOX {port} none"))
    learnt_ms = _tfo_exchange(listener)  # a cookie request answered: the cookie cached
    fast_ms = _tfo_exchange(listener)  # SYN-data through
    answers.append(delayer.say(f"MIDDLEBOX {port} drop-syn-data"))
    dropped_data_ms = _tfo_exchange(listener)
    listener.close()
    stopped = delayer.stop()
    os.close(dropped)
    return {
        "answers": answers,
        "stripped_ms": stripped_ms,
        "cookie_requests_seen_stripped": reqd_stripped,
        "dropped_request_ms": dropped_request_ms,
        "learnt_ms": learnt_ms,
        "fast_ms": fast_ms,
        "dropped_data_ms": dropped_data_ms,
        **stopped,
    }


def scenario_probe(args: argparse.Namespace) -> dict:
    """Can this machine run the others: the rule installs and the delayer binds."""
    add_rule("tcp")
    return Delayer(args.binary, args.delay_ms).stop()


SCENARIOS = {
    "probe": scenario_probe,
    "timing": scenario_timing,
    "release": scenario_release,
    "kill": scenario_kill,
    "busy": scenario_busy,
    "eperm": scenario_eperm,
    "overflow": scenario_overflow,
    "record": scenario_record,
    "drop": scenario_drop,
    "drop_overlap": scenario_drop_overlap,
    "middlebox": scenario_middlebox,
}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--binary", required=True)
    parser.add_argument("--delay-ms", type=float, default=10.0)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--stream-s", type=float, default=0.3)
    parser.add_argument("--fail-open", action="store_true")
    args = parser.parse_args()
    # Measure the delayer, not this process's wait for a CPU on a busy machine:
    # run SCHED_FIFO below the delayer's default priority 10 when allowed.
    with contextlib.suppress(OSError):
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(5))
    set_loopback()
    print(json.dumps(SCENARIOS[args.scenario](args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
