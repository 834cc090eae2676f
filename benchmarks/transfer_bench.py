"""How long the model takes to simulate a big answer read whole (figures, not asserts).

Run: PYTHONPATH=. python benchmarks/transfer_bench.py [--repeat N]
handshake plain, read_whole, MTU 1500, D = 10 ms, one iteration, answers of 10 kB to
1 MB (the schema's largest): the median wall time of N runs, beyond start-up (the
first, importing run is left out). Target: 1 MB in under 0.3 s.
The benchmark measures the model from outside; the model itself never reads a clock.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

from tests.model.scenarios import scenario
from tfolab.model import simulate

SIZES = (10_000, 100_000, 300_000, 1_000_000)
TARGET_MS = {1_000_000: 300.0}


def median_ms(size: int, repeat: int) -> float:
    config = dataclasses.replace(
        scenario("handshake", "plain").config, response_bytes=size, mtu=1500, read_whole=True
    )
    simulate(config, one_way_delay_ms=10.0, iterations=1)  # start-up: imports, caches
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        simulate(config, one_way_delay_ms=10.0, iterations=1)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"{'answer (read whole, MTU 1500, D = 10 ms)':<42} {'median ms':>10}")
    for size in SIZES:
        ms = median_ms(size, args.repeat)
        target = TARGET_MS.get(size)
        flag = "" if target is None or ms < target else f"  over target ({target:g} ms)"
        print(f"{size:>12,} bytes{'':<24} {ms:>10.1f}{flag}")


if __name__ == "__main__":
    main()
