"""The VM's cost per one-way trip through netem, measured without TCP.

Run as root in a network namespace of its own (`unshare -n python -m
tests.netem.emulation --delay 10`): brings lo up, puts `netem delay D` on it,
then bounces a UDP datagram between two sockets and prints, as JSON, what
each one-way trip took beyond D (ms). That excess is what the emulation adds
to every trip a lab's packet makes: netem's timer firing late, the idle vCPU
waking, the receiving process being scheduled, and this interpreter's own
send and receive (which a lab's C programs do faster). Nothing here knows TCP,
so the figure cannot hide a wrong TCP rule.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import time


def _netem(delay_ms: float) -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    subprocess.run(
        ["tc", "qdisc", "replace", "dev", "lo", "root", "netem", "delay", f"{delay_ms}ms"],
        check=True,
    )


def trips(delay_ms: float, exchanges: int, warmup: int = 5) -> list[float]:
    """Each one-way trip's time beyond delay_ms, in ms (two per exchange)."""
    a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    a.bind(("127.0.0.1", 0))
    b.bind(("127.0.0.1", 0))
    excess: list[float] = []
    for n in range(warmup + exchanges):
        sent = time.monotonic()
        a.sendto(b"ping", b.getsockname())
        _, back_to = b.recvfrom(64)
        arrived = time.monotonic()
        b.sendto(b"pong", back_to)
        a.recvfrom(64)
        returned = time.monotonic()
        if n >= warmup:
            excess.append((arrived - sent) * 1000.0 - delay_ms)
            excess.append((returned - arrived) * 1000.0 - delay_ms)
        time.sleep(0.005)  # let the vCPU go idle between exchanges, as a lab's runs do
    return excess


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, required=True)
    parser.add_argument("--exchanges", type=int, default=30)
    args = parser.parse_args()
    _netem(args.delay)
    print(json.dumps({"delay_ms": args.delay, "excess_ms": trips(args.delay, args.exchanges)}))


if __name__ == "__main__":
    main()
