"""The bundled server beside nginx at D = 0: requests/s and server CPU per request.

Usage:
    sudo python benchmarks/bench_servers.py [--runs 3] [--requests 1024]

Runs `tfolab bench --delays 0 --json` RUNS times (each one the median of its
alternating rounds, C = 8 in flight, plain and TFO, nginx beside the bundled
server) and prints each run's requests/s ratio (bundled / nginx), the server
CPU per request of both (/proc/PID/schedstat around each run), and the
medians over the runs. Needs nginx (apt-get install nginx). Figures only:
nothing here passes or fails. Run it alone on the machine (under the timing
lock where several people share one): the requests/s at D = 0 follow
whatever else the CPUs are doing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys


def one_run(requests: int) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "tfolab", "bench", "--delays", "0", "--requests", str(requests),
         "--peer", "nginx", "--json"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        sys.exit(f"bench_servers: tfolab bench failed: {done.stderr.strip()[-300:]}")
    data: dict[str, object] = json.loads(done.stdout)
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--requests", type=int, default=1024)
    args = parser.parse_args()
    ratios: dict[str, list[float]] = {"plain": [], "tfo": []}
    cpu: dict[tuple[str, str], list[float]] = {}
    print(f"{'run':>3} {'mode':<6} {'tfolab req/s':>13} {'nginx req/s':>12} {'ratio':>6} "
          f"{'tfolab cpu us':>14} {'nginx cpu us':>13}")  # fmt: skip
    for run in range(1, args.runs + 1):
        data = one_run(args.requests)
        rows = {row["server"]: row for row in data["results"]}  # type: ignore[attr-defined]
        for mode in ("plain", "tfo"):
            ours, theirs = rows["tfolab"][mode], rows["nginx"][mode]
            ratio = ours["req_per_s"] / theirs["req_per_s"]
            ratios[mode].append(ratio)
            for server, figures in (("tfolab", ours), ("nginx", theirs)):
                cpu.setdefault((server, mode), []).append(figures["server_cpu_us_per_request"])
            print(f"{run:>3} {mode:<6} {ours['req_per_s']:>13.0f} {theirs['req_per_s']:>12.0f} "
                  f"{ratio:>6.3f} {ours['server_cpu_us_per_request']:>14.1f} "
                  f"{theirs['server_cpu_us_per_request']:>13.1f}")  # fmt: skip
    print()
    for mode in ("plain", "tfo"):
        print(
            f"{mode}: median ratio {statistics.median(ratios[mode]):.3f} over {args.runs} runs; "
            f"server CPU per request: tfolab {statistics.median(cpu['tfolab', mode]):.1f} us, "
            f"nginx {statistics.median(cpu['nginx', mode]):.1f} us"
        )


if __name__ == "__main__":
    main()
