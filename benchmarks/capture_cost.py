"""What does the packet capture (tfolab.runner.capture) cost a headline latency?

Usage:
    sudo python benchmarks/capture_cost.py [--samples 200] [--delays 0,10] [--json]

In a network namespace of its own (this process enters it: the host's network
is never touched) it sets lo up, installs the NFQUEUE rule (at INPUT, as a
run does) and tfo-delay at each one-way delay D, and starts the native echo
server. The headline is the handshake lab's: the native client's connect() to
the first response byte, one new connection per sample, in arms taken in
rotating order, SAMPLES each, every sample after the same short pause.

Each D is measured twice. First the packet ring (capture.Capture, the capture
of the netem and none backends), with a delayer that records nothing:

    off    the lab's Capture is open (as the runner keeps it: bound, with a
           filter that keeps nothing) but not running
    on     that Capture started before the client's call and stopped after it
    fresh  a Capture opened just before (a kernel RCU grace period), started,
           stopped and closed: what happens when open() is not done early

Then the NFQUEUE backend's own capture (capture_delayer.DelayerCapture): the
delayer copies and records every packet it releases (--record-fd), as in a
run, in two arms:

    off    recording, no capture running
    on     a DelayerCapture started before the call and stopped after it
           (SIGUSR1, the records read)

The record row's "off" against the ring row's "off" is what copying and
recording every packet costs the headline.

It prints, per D, each arm's median and p99 and their differences from "off"
in microseconds, and the segments captured per sample.

Then a burst, on one Capture opened before its connections were made (so
their handshakes must not be in it): 1000 small writes spread over 100
connections (each within its initial congestion window, so every write is a
segment) on lo without delay, captured whole; it prints the frames captured,
the kernel's own count of segments sent (Tcp OutSegs of the namespace),
PACKET_STATISTICS drops and the segments lost. Figures only: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tfolab.core import native
from tfolab.model.scenario import ScenarioConfig
from tfolab.runner import netns, priority
from tfolab.runner.backends.nfqueue import delayer_args
from tfolab.runner.backends.nfrule import install_rule
from tfolab.runner.capture import Capture, CaptureUnavailable
from tfolab.runner.capture_delayer import DelayerCapture
from tfolab.runner.server import start_server

BURST_CONNECTIONS, BURST_WRITES_EACH = 100, 10
SETTLE_S = 0.005


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def one_headline(port: int) -> native.Sample:
    options = native.ClientOptions(port=port, timeout_ms=10_000)
    sample = native.run_client(options)[0]
    if sample.error:
        raise RuntimeError(f"client failed: {sample.error}")
    return sample


RING_ARMS = ("off", "on", "fresh")
RECORD_ARMS = ("off", "on")


def measure(delay_ms: float, samples: int, record: bool) -> dict[str, Any]:
    memfd = os.memfd_create("capture-cost") if record else None
    delayer = subprocess.Popen(
        delayer_args(str(native.executable_path("tfo-delay")), delay_ms, record_fd=memfd),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        pass_fds=() if memfd is None else (memfd,),
    )
    assert delayer.stdout is not None and delayer.stdout.readline().strip() == "READY"
    server = start_server(str(native.executable_path("tfo-echo-server")), ScenarioConfig())
    lab_capture: Capture | DelayerCapture
    if memfd is None:
        lab_capture = Capture()
    else:
        lab_capture = DelayerCapture(delayer.pid, delayer.stdout.fileno(), memfd)
    lab_capture.open()  # as the runner should: once, at setup
    arms = RECORD_ARMS if record else RING_ARMS
    times: dict[str, list[float]] = {arm: [] for arm in arms}
    captured: list[int] = []
    after_ms = 2 * delay_ms + 2  # most of the close (a last ACK may come at 3D: not counted)

    def sample(arm: str) -> float:
        fresh = Capture() if arm == "fresh" else None
        if fresh is not None:
            fresh.open()
        time.sleep(SETTLE_S)  # the same pause before every sample, whatever the arm
        running: Capture | DelayerCapture | None = fresh or (lab_capture if arm == "on" else None)
        if running is not None:
            running.start()
        headline = one_headline(server.port).first_byte_ms
        time.sleep(after_ms / 1000)
        if running is not None:
            captured.append(len(running.stop().segments))
        if fresh is not None:
            fresh.close()
        return headline

    try:
        for _ in range(3):  # warm-up: first calls page things in
            sample("off")
        for i in range(samples):
            turn = i % len(arms)
            for arm in arms[turn:] + arms[:turn]:  # the order rotates
                times[arm].append(sample(arm))
    finally:
        lab_capture.close()
        server.stop()
        delayer.terminate()
        delayer.communicate(timeout=5)
        if memfd is not None:
            os.close(memfd)
    row: dict[str, Any] = {
        "delay_ms": delay_ms,
        "samples_each": samples,
        "capture": "record" if record else "ring",
        "arms": list(arms),
    }
    for arm in arms:
        row[f"median_{arm}_ms"] = statistics.median(times[arm])
        row[f"p99_{arm}_ms"] = percentile(times[arm], 0.99)
    for arm in arms[1:]:
        row[f"median_{arm}_diff_us"] = (row[f"median_{arm}_ms"] - row["median_off_ms"]) * 1000
        row[f"p99_{arm}_diff_us"] = (row[f"p99_{arm}_ms"] - row["p99_off_ms"]) * 1000
    row["segments_per_captured_sample"] = statistics.mean(captured)
    return row


def out_segs() -> int:
    lines = Path("/proc/net/snmp").read_text().splitlines()
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("Tcp:"):
            return int(dict(zip(names.split(), values.split(), strict=True))["OutSegs"])
    raise RuntimeError("no Tcp line in /proc/net/snmp")


def burst() -> dict[str, int]:
    capture = Capture()
    capture.open()  # before the handshakes: they must not show up in the capture
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(BURST_CONNECTIONS)
    pairs = []
    for _ in range(BURST_CONNECTIONS):
        client = socket.socket()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client.connect(server.getsockname())
        pairs.append((client, server.accept()[0]))
    before = out_segs()
    capture.start()
    started = time.monotonic_ns()
    for i in range(BURST_WRITES_EACH):
        for client, _conn in pairs:
            client.send(b"%09d\n" % i)
    sent_ns = time.monotonic_ns() - started
    for _client, conn in pairs:
        received = b""
        while len(received) < 10 * BURST_WRITES_EACH:
            received += conn.recv(65536)
    time.sleep(0.01)
    result = capture.stop()
    sent = out_segs() - before
    capture.close()
    for client, conn in pairs:
        client.close()
        conn.close()
    server.close()
    return {
        "writes": BURST_CONNECTIONS * BURST_WRITES_EACH,
        "writes_took_us": sent_ns // 1000,
        "data_segments": sum(1 for s in result.segments if s.length),
        "captured": len(result.segments),
        "kernel_sent": sent,
        "drops": result.drops,
        "lost": result.lost + max(0, sent - len(result.segments)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--delays", default="0,10", help="one-way delays in ms, comma-separated")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    netns.enter_new_netns()
    netns.set_loopback(True)
    realtime, scheduling = priority.realtime_permitted()
    if realtime:
        priority.prefer_realtime()
    install_rule()
    try:
        with Capture():
            pass
    except CaptureUnavailable as err:
        sys.exit(f"capture_cost: {err.reason}")
    rows = [
        measure(float(d), args.samples, record)
        for d in args.delays.split(",")
        for record in (False, True)
    ]
    burst_row = burst()
    if args.json:
        print(json.dumps({"scheduling": scheduling, "headline": rows, "burst": burst_row}))
        return
    print(f"capture cost on connect -> first response byte, through NFQUEUE ({scheduling})")
    print(
        f"{'D ms':>5} {'N':>4} {'capture':>8} {'arm':>5} {'median ms':>10} {'diff us':>8}"
        f" {'p99 ms':>8} {'diff us':>8}"
    )
    for r in rows:
        for arm in r["arms"]:
            diffs = (
                f"{r[f'median_{arm}_diff_us']:8.1f} {r[f'p99_{arm}_ms']:8.3f}"
                f" {r[f'p99_{arm}_diff_us']:8.1f}"
                if arm != "off"
                else f"{'':8} {r['p99_off_ms']:8.3f} {'':8}"
            )
            print(
                f"{r['delay_ms']:5.0f} {r['samples_each']:4.0f} {r['capture']:>8} {arm:>5}"
                f" {r[f'median_{arm}_ms']:10.3f} {diffs}"
            )
        print(f"      segments captured per sample: {r['segments_per_captured_sample']:.1f}")
    b = burst_row
    print(
        f"burst: {b['writes']} writes in {b['writes_took_us']} us -> {b['data_segments']} data "
        f"segments; captured {b['captured']} of {b['kernel_sent']} sent (Tcp OutSegs); "
        f"drops {b['drops']}, lost {b['lost']}"
    )


if __name__ == "__main__":
    main()
