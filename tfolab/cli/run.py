"""`tfolab run`: the real run in the lab's namespace, the model's prediction beside it.

Exit 1 when a measurement falls outside its band, a captured packet disagrees
with the model, or a predicted TcpExt counter moved otherwise; the sentences go
to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING

from tfolab.cli.common import labs_dir_argument, prepare, scenario_arguments, slots_dir_argument
from tfolab.runner.backends import BACKEND_CHOICES

if TYPE_CHECKING:
    from tfolab.lab.session import LabResult
    from tfolab.runner.protocol import Event

NAME = "run"
HELP = "the real run, with the model's prediction beside it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    scenario_arguments(parser)
    parser.add_argument(
        "--backend",
        choices=BACKEND_CHOICES,
        default="auto",
        help="delay emulation (auto: netem, else nfqueue, else none; none at --delay 0 "
        "only: it adds no delay)",
    )
    labs_dir_argument(parser, top=False)
    slots_dir_argument(parser, top=False)


def handle(args: argparse.Namespace) -> int:
    from tfolab.lab import session
    from tfolab.view import report

    lab, planned, delay_ms = prepare(args)
    progress = None if args.json else _print_progress
    result = asyncio.run(session.run(lab, planned, delay_ms, args.backend, progress))
    if args.pcap:
        _save_capture(args.pcap, result)
    if args.json:
        print(json.dumps(result.to_json(), indent=1))
    else:
        # The delay that ran (the runner's setup event), which the whole report uses.
        print(
            f"\n{lab.title}: {report.delay_words(result.delay_ms)}, backend {result.backend}, "
            f"kernel {result.kernel_release}, setup {result.setup_ms:.0f} ms"
        )
        for note in result.notes:
            print(f"  note: {note}")
        print()
        print(report.results_table(result))
        print()
        print(report.counters_text(result))
        print()
        for line in report.packet_lines(result):
            print(line)
        print()
        print(report.conclusion(result))
    for name, miss in result.failures:
        assert miss.measured_ms is not None
        side = "above" if miss.measured_ms > miss.predicted_ms else "below"
        print(
            f"tfolab: {lab.name}/{name} #{miss.i} measured {miss.measured_ms:.1f} ms, "
            f"{miss.off_by_ms:.1f} ms {side} its band ({miss.predicted_ms:.1f} ± "
            f"{miss.tolerance_ms:.1f} ms)",
            file=sys.stderr,
        )
    if result.delay_ms != delay_ms:
        print(
            f"tfolab: WARNING: {delay_ms:g} ms was asked but {result.delay_ms:g} ms ran "
            f"(backend {result.backend}); the report uses what ran",
            file=sys.stderr,
        )
    for name, sentence in result.packet_failures + result.counter_failures:
        print(f"tfolab: {lab.name}/{name}: {sentence}", file=sys.stderr)
    return 1 if result.failures or result.packet_failures or result.counter_failures else 0


def _save_capture(path: str, result: LabResult) -> None:
    from tfolab.lab import pcap

    frames = [frame for s in result.scenarios for frame in s.frames]
    if result.capture_off:
        print(f"tfolab: nothing written to {path}: {result.capture_off}", file=sys.stderr)
        return
    written = pcap.write_captured(pcap.check_writable(path), frames)
    print(f"tfolab: {written} captured packets written to {path}", file=sys.stderr)


def _print_progress(event: Event) -> None:
    from tfolab.view.report import progress_line

    line = progress_line(event)
    if line is not None:
        print(line, file=sys.stderr, flush=True)
