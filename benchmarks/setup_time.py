"""Lab setup time: namespace + delay backend + echo server ready (target < 150 ms).

Usage: sudo python benchmarks/setup_time.py [--runs 10] [--delay 10] [--backend auto]

Starts the runner for a one-iteration handshake lab several times and prints the
runner's own setup_ms (from its start to the first server ready) and the wall
time the parent saw until the "setup" event (which adds Python's start-up).
Figures only; no pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from tfolab.lab.catalog import find_lab
from tfolab.lab.plan import plan
from tfolab.runner.client import stream_events
from tfolab.runner.protocol import Failed, Job, JobScenario, Setup


async def one_run(delay_ms: float, backend: str) -> tuple[float, float, str]:
    lab = find_lab("handshake")
    planned = plan(lab, "plain", 1, delay_ms=delay_ms)
    job = Job(
        "handshake",
        delay_ms,
        backend,
        tuple(JobScenario(p.name, p.iterations, p.config) for p in planned.scenarios),
    )
    started = time.monotonic()
    setup_ms, seen_ms, used = 0.0, 0.0, "?"
    async for event in stream_events(job):
        if isinstance(event, Setup):
            setup_ms, used = event.setup_ms, event.backend
            seen_ms = (time.monotonic() - started) * 1000
        if isinstance(event, Failed):
            raise SystemExit(f"runner error: {event.reason} ({event.fix})")
    return setup_ms, seen_ms, used


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--delay", type=float, default=10.0)
    parser.add_argument("--backend", default="auto")
    args = parser.parse_args()
    results = [asyncio.run(one_run(args.delay, args.backend)) for _ in range(args.runs)]
    setups = [r[0] for r in results]
    seen = [r[1] for r in results]
    print(f"backend {results[0][2]}, delay {args.delay:g} ms one way, {args.runs} runs")
    print(
        f"setup_ms (runner: namespace + delay + server ready): "
        f"median {statistics.median(setups):.1f}  max {max(setups):.1f}  (target < 150)"
    )
    print(
        f"parent saw setup after (incl. Python start-up):       "
        f"median {statistics.median(seen):.1f}  max {max(seen):.1f}"
    )


if __name__ == "__main__":
    main()
