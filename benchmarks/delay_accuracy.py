"""How exactly does the bundled NFQUEUE delayer (tfo-delay) add its delay?

Usage:
    sudo python benchmarks/delay_accuracy.py [--delay-ms 10] [--packets 1000]
        [--interval-ms 0.5] [--burst 200] [--binary PATH] [--json]

In a network namespace of its own (``unshare --net``; the host's iptables, lo,
qdiscs and sysctls are never touched) it brings lo up, sends UDP to the delayer
with the rule ``-i lo -p udp -j NFQUEUE --queue-num 0 --queue-bypass`` in INPUT
(installed by tfolab.runner.backends.nfrule, as a run's),
starts tfo-delay with the given one-way delay D, and sends PACKETS datagrams to
a receiver on 127.0.0.1: PACKETS - BURST of them paced every INTERVAL ms, then
one back-to-back burst of BURST.  Each payload carries its sequence number and
the sender's CLOCK_MONOTONIC and CLOCK_REALTIME send times.

The receiver (a separate process, so the GIL plays no part, running SCHED_FIFO
at priority 5, below the delayer's default 10, so that it measures the delayer
and not its own wait for a CPU) records for every datagram its CLOCK_MONOTONIC
read time; the delayer records when it released each one (`--record-fd`, the
verdict's CLOCK_MONOTONIC stamp: the moment the packet went on to the
receiving socket, what a run's capture reports on this backend). The kernel's
own receive stamp (SO_TIMESTAMPNS) cannot time it: it is taken on lo's receive
path, before the INPUT hook holds the packet. The added delay's error is

    receiver clock:     (monotonic read time - monotonic send time) - D
    verdict stamp:      (recorded verdict time - monotonic send time) - D

the first includes the receiver's own wake-up, the second does not.  It prints
median, p99, max and min of the error in ms for the paced packets, the burst
and all, the losses, reorderings and duplicates, and the delayer's statistics
line.  Figures only: nothing here passes or fails.  ``--json`` prints one JSON
object instead (tests/delay use it).

The binary is ``--binary``, else the installed package's
``tfolab/_native/tfo-delay``, else native/delay/tfo_delay.c compiled with the
system cc into a temporary directory.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import select
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tfolab.runner.backends.nfqueue import delayer_args
from tfolab.runner.backends.nfrule import RuleRefused, install_rule
from tfolab.runner.netns import set_loopback

REPO = Path(__file__).resolve().parent.parent
QUEUE = 0
RECEIVER_RT_PRIORITY = 5
PAYLOAD = struct.Struct("!Iqq")  # seq, send CLOCK_MONOTONIC ns, send CLOCK_REALTIME ns
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)


# --------------------------------------------------------------------------- binary


def find_binary(explicit: str | None) -> str:
    """--binary, else the installed package's tfo-delay (the one the runner uses)."""
    if explicit:
        return explicit
    from tfolab.core import native

    path = native.optional_executable("tfo-delay")
    if path is None:
        sys.exit("delay_accuracy: tfo-delay is not built; pip install -e . first, or pass --binary")
    return path


# --------------------------------------------------------------------------- namespace side


def add_queue_rule(protocol: str, queue: int) -> None:
    try:
        install_rule(queue, protocol)
    except RuleRefused as err:
        raise SystemExit(f"delay_accuracy: cannot install the NFQUEUE rule: {err}") from None


def start_delayer(
    binary: str, delay_ms: float, queue: int, record_fd: int
) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        delayer_args(binary, delay_ms, queue, record_fd=record_fd),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        pass_fds=(record_fd,),
    )
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 5.0)
    line = proc.stdout.readline().strip() if ready else ""
    if line != "READY":
        proc.kill()
        _, err = proc.communicate(timeout=5)
        raise SystemExit(f"delay_accuracy: tfo-delay did not start: {err.strip()}")
    return proc


def stop_delayer(proc: subprocess.Popen[str]) -> tuple[dict[str, Any], str]:
    proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    return (json.loads(lines[-1]) if lines else {}), err.strip()


def receive(sock: socket.socket, expected: int, idle_s: float, first_s: float) -> list[list[int]]:
    """Child process: [seq, tx_mono, tx_rt, rx_mono] per datagram."""
    got: list[list[int]] = []
    sock.settimeout(first_s)
    while len(got) < expected:
        try:
            data = sock.recv(64)
        except TimeoutError:
            break
        rx_mono = time.monotonic_ns()
        sock.settimeout(idle_s)
        if len(data) >= PAYLOAD.size:
            seq, tx_mono, tx_rt = PAYLOAD.unpack_from(data)
            got.append([seq, tx_mono, tx_rt, rx_mono])
    return got


def verdict_times(record: bytes) -> dict[int, int]:
    """seq -> the delayer's verdict stamp (CLOCK_MONOTONIC ns), from its raw IP pcap."""
    times: dict[int, int] = {}
    at = 24  # the pcap file header
    while at + 16 <= len(record):
        seconds, nanoseconds, cap_len, _wire_len = struct.unpack_from("=IIII", record, at)
        packet = record[at + 16 : at + 16 + cap_len]
        at += 16 + cap_len
        ihl = (packet[0] & 0x0F) * 4
        payload = packet[ihl + 8 :]  # past the UDP header
        if len(payload) >= PAYLOAD.size:
            times[PAYLOAD.unpack_from(payload)[0]] = seconds * 1_000_000_000 + nanoseconds
    return times


def sleep_until(deadline_ns: int) -> None:
    left = deadline_ns - time.monotonic_ns()
    if left > 0:
        time.sleep(left / 1e9)


def measure(
    binary: str, delay_ms: float, packets: int, burst: int, interval_ms: float
) -> dict[str, Any]:
    """Run inside a fresh namespace: the whole measurement, as a dict."""
    set_loopback()
    add_queue_rule("udp", QUEUE)
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    try:
        rx.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 8 << 20)
    except OSError:
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    port = rx.getsockname()[1]
    record = os.memfd_create("delay-accuracy")
    delayer = start_delayer(binary, delay_ms, QUEUE, record)

    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # the receiver
        status = 1
        try:
            os.close(read_end)
            with contextlib.suppress(OSError):  # below the delayer's SCHED_FIFO 10
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(RECEIVER_RT_PRIORITY))
            rows = receive(rx, packets, idle_s=delay_ms / 1e3 + 1.0, first_s=delay_ms / 1e3 + 5)
            with os.fdopen(write_end, "w") as out:
                json.dump(rows, out)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    rx.close()

    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx.connect(("127.0.0.1", port))
    time.sleep(0.05)
    paced = packets - burst
    start = time.monotonic_ns()
    for seq in range(packets):
        if seq < paced:
            sleep_until(start + int(seq * interval_ms * 1e6))
        tx.send(PAYLOAD.pack(seq, time.monotonic_ns(), time.clock_gettime_ns(time.CLOCK_REALTIME)))
    tx.close()

    with os.fdopen(read_end) as results:
        text = results.read()
    os.waitpid(child, 0)
    stats, stats_line = stop_delayer(delayer)
    verdicts = verdict_times(os.pread(record, os.fstat(record).st_size, 0))
    os.close(record)
    rows = [[*row, verdicts.get(row[0], 0)] for row in (json.loads(text) if text else [])]
    return summarise(rows, delay_ms, packets, burst, interval_ms, stats, stats_line)


# --------------------------------------------------------------------------- figures


def spread(errors_ms: list[float]) -> dict[str, Any]:
    if not errors_ms:
        return {"n": 0, "median": None, "p99": None, "max": None, "min": None}
    ordered = sorted(errors_ms)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered) + 0.999999) - 1)]
    return {
        "n": len(ordered),
        "median": round(statistics.median(ordered), 4),
        "p99": round(p99, 4),
        "max": round(ordered[-1], 4),
        "min": round(ordered[0], 4),
    }


def summarise(
    rows: list[list[int]],
    delay_ms: float,
    packets: int,
    burst: int,
    interval_ms: float,
    stats: dict[str, Any],
    stats_line: str,
) -> dict[str, Any]:
    paced = packets - burst
    seqs = [r[0] for r in rows]
    unique = set(seqs)
    reordered, highest = 0, -1
    for seq in seqs:
        if seq < highest:
            reordered += 1
        highest = max(highest, seq)

    def errors(which: str, selected: list[list[int]]) -> list[float]:
        if which == "receiver":
            return [(r[3] - r[1]) / 1e6 - delay_ms for r in selected]
        return [(r[4] - r[1]) / 1e6 - delay_ms for r in selected if r[4]]

    groups = {
        "paced": [r for r in rows if r[0] < paced],
        "burst": [r for r in rows if r[0] >= paced],
        "all": rows,
    }
    return {
        "delay_ms": delay_ms,
        "packets": packets,
        "paced": paced,
        "burst": burst,
        "interval_ms": interval_ms,
        "kernel": platform.release(),
        "received": len(rows),
        "lost": packets - len(unique),
        "duplicates": len(seqs) - len(unique),
        "reordered": reordered,
        "error_ms": {
            f"{group}_{which}": spread(errors(which, selected))
            for group, selected in groups.items()
            for which in ("receiver", "verdict")
        },
        "delayer": stats,
        "delayer_line": stats_line,
    }


def report(result: dict[str, Any]) -> str:
    r = result
    lines = [
        f"tfo-delay accuracy: D = {r['delay_ms']:g} ms one-way, {r['packets']} UDP packets "
        f"({r['paced']} paced every {r['interval_ms']:g} ms + a burst of {r['burst']}), "
        f"kernel {r['kernel']}",
        "error of the added delay (measured - D), ms:",
        f"  {'':26}{'median':>9}{'p99':>9}{'max':>9}{'min':>9}{'n':>7}",
    ]
    for group in ("paced", "burst", "all"):
        for which, label in (("receiver", "receiver clock"), ("verdict", "verdict stamp")):
            s = r["error_ms"][f"{group}_{which}"]
            if s["n"] == 0:
                lines.append(f"  {group + ', ' + label:26}{'-':>9}{'-':>9}{'-':>9}{'-':>9}{0:>7}")
                continue
            lines.append(
                f"  {group + ', ' + label:26}{s['median']:>9.3f}{s['p99']:>9.3f}"
                f"{s['max']:>9.3f}{s['min']:>9.3f}{s['n']:>7}"
            )
    lines.append(f"losses {r['lost']}, reordered {r['reordered']}, duplicates {r['duplicates']}")
    lines.append(f"delayer: {r['delayer_line'] or '(no statistics line)'}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Accuracy of the tfo-delay NFQUEUE delayer "
        "(run as root; works in a namespace of its own)."
    )
    p.add_argument("--delay-ms", type=float, default=10.0, help="one-way delay D (default 10)")
    p.add_argument("--packets", type=int, default=1000, help="datagrams in all (default 1000)")
    p.add_argument(
        "--burst", type=int, default=200, help="of which sent back to back at the end (default 200)"
    )
    p.add_argument(
        "--interval-ms", type=float, default=0.5, help="pacing of the others (default 0.5)"
    )
    p.add_argument("--binary", help="tfo-delay to measure (default: installed, else built)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--inside-namespace", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if (
        args.delay_ms < 0
        or args.packets < 1
        or not 0 <= args.burst <= args.packets
        or args.interval_ms < 0
    ):
        p.error(
            "need --delay-ms >= 0, --packets >= 1, 0 <= --burst <= --packets, --interval-ms >= 0"
        )
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.inside_namespace:
        result = measure(args.binary, args.delay_ms, args.packets, args.burst, args.interval_ms)
        print(json.dumps(result))
        return 0
    if os.geteuid() != 0:
        print(
            "delay_accuracy: needs root (network namespace, iptables, NFQUEUE): "
            "python benchmarks/delay_accuracy.py as root",
            file=sys.stderr,
        )
        return 2
    if shutil.which("unshare") is None:
        print("delay_accuracy: needs unshare (util-linux)", file=sys.stderr)
        return 2
    binary = find_binary(args.binary)
    budget = 60 + args.delay_ms / 1e3 + args.packets * (args.interval_ms / 1e3 + 0.001)
    inner = subprocess.run(
        [
            "unshare",
            "--net",
            "--",
            sys.executable,
            str(Path(__file__).resolve()),
            "--inside-namespace",
            "--binary",
            binary,
            "--delay-ms",
            repr(args.delay_ms),
            "--packets",
            str(args.packets),
            "--burst",
            str(args.burst),
            "--interval-ms",
            repr(args.interval_ms),
        ],
        capture_output=True,
        text=True,
        timeout=budget,
    )
    if inner.returncode != 0 or not inner.stdout.strip():
        print(
            f"delay_accuracy: the measurement failed: {inner.stderr.strip()[-500:]}",
            file=sys.stderr,
        )
        return 1
    result = json.loads(inner.stdout.strip().splitlines()[-1])
    print(json.dumps(result) if args.json else report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
