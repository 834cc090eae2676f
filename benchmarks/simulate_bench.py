"""How long the model takes to simulate every CLI scenario (figures, not asserts).

Run: PYTHONPATH=. python benchmarks/simulate_bench.py [--repeat N]
For each scenario at D = 10 ms: the median wall time of N runs with the
scenario's default iterations and with 20 iterations. Target: under 50 ms each.
The benchmark measures the model from outside; the model itself never reads a clock.
"""

from __future__ import annotations

import argparse
import statistics
import time

from tests.model.scenarios import SCENARIOS
from tfolab.model import ScenarioConfig, simulate

TARGET_MS = 50.0


def median_ms(config: ScenarioConfig, iterations: int, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        simulate(config, one_way_delay_ms=10.0, iterations=iterations)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    print(
        f"{'scenario (D = 10 ms)':<26} {'iters':>5} {'median ms':>10} {'median ms, 20 iters':>20}"
    )
    for item in SCENARIOS:
        default = median_ms(item.config, item.iterations, args.repeat)
        twenty = median_ms(item.config, 20, args.repeat)
        flag = "" if max(default, twenty) < TARGET_MS else "  over target"
        name = f"{item.lab} {item.name}"
        print(f"{name:<26} {item.iterations:>5} {default:>10.2f} {twenty:>20.2f}{flag}")


if __name__ == "__main__":
    main()
