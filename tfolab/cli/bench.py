"""`tfolab bench`: N fresh HTTP GETs with and without Fast Open, per delay, beside nginx.

Everything is checked (bench_plan.plan_bench) before any namespace or process
exists; bad input is one line and exit 2. Progress goes to stderr as a bar;
the report (table, closing lines, plots) or the JSON goes to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from tfolab.cli.common import slots_dir_argument

NAME = "bench"
HELP = "N fresh HTTP GETs with and without Fast Open, per delay, beside nginx"
BAR_WIDTH = 30


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from tfolab.lab.bench_plan import DEFAULT_DELAYS, DEFAULT_REQUESTS, PEERS

    parser.add_argument(
        "--delays",
        default=DEFAULT_DELAYS,
        metavar="MS,MS,...",
        help=f"one-way delays in ms, RTT = 2 x delay (default {DEFAULT_DELAYS})",
    )
    parser.add_argument(
        "--requests",
        type=int,
        default=DEFAULT_REQUESTS,
        metavar="N",
        help=f"fresh connections per server, delay and mode (default {DEFAULT_REQUESTS})",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        metavar="C",
        help="requests in flight at once, at every delay (default: automatic, printed "
        "with the results: 8 at D = 0, else enough for a plain run of about 5 s)",
    )
    parser.add_argument(
        "--peer",
        choices=PEERS,
        default="auto",
        help="nginx beside the bundled server: auto (where installed), nginx (required), none",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object")
    slots_dir_argument(parser, top=False)


def handle(args: argparse.Namespace) -> int:
    from tfolab.lab.bench import run_bench
    from tfolab.lab.bench_plan import plan_bench
    from tfolab.view import bench_report

    plan = plan_bench(args.delays, args.requests, args.concurrency, args.peer)
    if plan.peer_note and args.peer == "auto":
        print(f"tfolab: {plan.peer_note}", file=sys.stderr)
    progress = _Bar() if sys.stderr.isatty() else _Lines()
    try:
        result = asyncio.run(run_bench(plan, progress))
    finally:
        progress.close()  # an error's line starts on a fresh line
    if args.json:
        print(json.dumps(result.to_json(), indent=1))
        return 0
    print("\n".join(bench_report.header(result)))
    for note in result.notes:
        print(f"  note: {note}")
    print()
    print(bench_report.table(result))
    print()
    print("\n".join(bench_report.closing(result)))
    print()
    print(bench_report.plots(result, color=sys.stdout.isatty()))
    return 0


class _Bar:
    """A one-line progress bar on a terminal's stderr, redrawn in place."""

    def __call__(self, fraction: float, text: str) -> None:
        filled = round(fraction * BAR_WIDTH)
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        sys.stderr.write(f"\r[{bar}] {fraction * 100:3.0f}% {text[:60]:<60}")
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\r" + " " * (BAR_WIDTH + 70) + "\r")
        sys.stderr.flush()


class _Lines:
    """Where stderr is not a terminal: one line per finished run, no redrawing."""

    def __init__(self) -> None:
        self.last = -1

    def __call__(self, fraction: float, text: str) -> None:
        step = int(fraction * 100) // 25
        if step != self.last:
            self.last = step
            print(f"tfolab: bench {fraction * 100:3.0f}%: {text}", file=sys.stderr, flush=True)

    def close(self) -> None:
        pass
