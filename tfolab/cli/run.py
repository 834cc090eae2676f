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

from tfolab.cli import plots
from tfolab.cli.common import labs_dir_argument, prepare, scenario_arguments, slots_dir_argument
from tfolab.runner.backends import BACKEND_CHOICES

if TYPE_CHECKING:
    from tfolab.lab.progress import Progress
    from tfolab.lab.results import LabResult

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
    from tfolab.lab.run_plan import for_real
    from tfolab.view import report
    from tfolab.view.run_summary import delay_words, miss_words, summarize

    lab_plan = prepare(args)
    lab = lab_plan.lab
    run_plan = for_real(lab_plan, args.backend)
    progress = None if args.json else _print_progress
    result = asyncio.run(session.run(run_plan, progress))
    if args.pcap:
        _save_capture(args.pcap, result)
    if args.json:
        print(json.dumps(result.to_json(), indent=1))
    else:
        # The delay that ran (the runner's setup event), which the whole report uses.
        print(
            f"\n{lab.title}: {delay_words(result.delay_ms)}, backend {result.backend}, "
            f"kernel {result.kernel_release}, setup {result.setup_ms:.0f} ms"
        )
        for note in result.notes:
            print(f"  note: {note}")
        for repeat in result.repeats:
            print(f"  repeated: {repeat.words()}")
        print()
        print(report.results_table(result))
        print()
        print(report.counters_text(result))
        print()
        for line in report.packet_lines(result):
            print(line)
        print()
        print(report.conclusion(result))
    plots.emit(args, lab.name, result)
    summary = summarize(result)
    for miss in summary.misses:
        print(f"tfolab: {lab.name}/{miss.scenario} {miss_words(miss)}", file=sys.stderr)
    if result.delay_ms != lab_plan.delay_ms:
        print(
            f"tfolab: WARNING: {lab_plan.delay_ms:g} ms was asked but {result.delay_ms:g} ms "
            f"ran (backend {result.backend}); the report uses what ran",
            file=sys.stderr,
        )
    for name, sentence in summary.packet_failures + summary.counter_failures:
        print(f"tfolab: {lab.name}/{name}: {sentence}", file=sys.stderr)
    return 0 if summary.agrees else 1


def _save_capture(path: str, result: LabResult) -> None:
    from tfolab.lab import pcap

    frames = [frame for s in result.scenarios for frame in s.frames]
    if result.capture_off:
        print(f"tfolab: nothing written to {path}: {result.capture_off}", file=sys.stderr)
        return
    written = pcap.write_captured(pcap.check_writable(path), frames)
    print(f"tfolab: {written} captured packets written to {path}", file=sys.stderr)


def _print_progress(progress: Progress) -> None:
    from tfolab.view.run_summary import progress_words

    line = progress_words(progress)
    if line is not None:
        print(line, file=sys.stderr, flush=True)
