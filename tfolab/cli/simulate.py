"""`tfolab simulate`: the model alone, as a summary table, ladders, JSON or pcap."""

from __future__ import annotations

import argparse
import json
import sys

from tfolab.cli import plots
from tfolab.cli.common import labs_dir_argument, prepare, scenario_arguments

NAME = "simulate"
HELP = "the model alone (no privileges)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    scenario_arguments(parser)
    parser.add_argument(
        "--ladder",
        action="store_true",
        help="print every scenario's ladder diagram (default: a summary table; "
        "--scenario NAME prints that scenario's ladder)",
    )
    parser.add_argument(
        "--every-segment",
        action="store_true",
        help="give every segment of a ladder its own arrow (default: a flight of 4 or more "
        "segments, or of quick ACKs, is one arrow labelled with what it folds)",
    )
    labs_dir_argument(parser, top=False)


def handle(args: argparse.Namespace) -> int:
    from tfolab.lab.prediction import predict
    from tfolab.view import report
    from tfolab.view.ladder_text import render_ladder

    lab_plan = prepare(args)
    lab = lab_plan.lab
    result = predict(lab_plan)
    if args.pcap:
        from tfolab.lab import pcap

        written = pcap.write_simulated(
            pcap.check_writable(args.pcap), (s.simulation for s in result.scenarios)
        )
        print(f"tfolab: {written} predicted packets written to {args.pcap}", file=sys.stderr)
    if args.json:
        print(json.dumps(result.to_json(), indent=1))
    elif not (args.scenario or args.ladder):
        print(report.simulation_summary(lab, result))
    else:
        for scenario in result.scenarios:
            print(report.scenario_heading(lab, scenario))
            print(render_ladder(scenario.simulation, fold=not args.every_segment))
            print()
    plots.emit(args, lab.name, result)
    return 0
