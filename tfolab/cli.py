"""The command line: `tfolab [list|doctor|simulate|run]`, over the same layers as the UI.

Rules: every user mistake or unusable environment is a UserError, printed as
one line (`tfolab: <reason> (<fix>)`) with exit code 2; a measurement outside
its band exits 1. Commands and flags follow DESIGN.md's contract.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import NoReturn

from tfolab.errors import UserError
from tfolab.runner.delay import BACKEND_CHOICES


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UserError(message, f"see `{self.prog} --help`")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tfolab",
        description="An interactive TCP teaching lab. Without a command it opens the terminal UI.",
    )
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)
    commands.add_parser("list", help="the labs and their scenarios")
    doctor = commands.add_parser("doctor", help="what this machine can do")
    doctor.add_argument("--json", action="store_true", help="machine-readable report")
    for name, help_text in (
        ("simulate", "the model alone (no privileges)"),
        ("run", "the real run, with the model's prediction beside it"),
    ):
        command = commands.add_parser(name, help=help_text)
        command.add_argument("lab", help="handshake, fastopen, delack (see `tfolab list`)")
        command.add_argument(
            "--delay",
            default="10",
            metavar="MS",
            help="one-way delay added to every packet, ms (RTT = 2 x delay)",
        )
        command.add_argument("--scenario", metavar="NAME", help="one scenario (default: all)")
        command.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="override a scenario setting (repeatable)",
        )
        command.add_argument(
            "--iterations",
            type=int,
            metavar="N",
            help="iterations per scenario (default: the lab's)",
        )
        command.add_argument("--json", action="store_true", help="one JSON object")
        if name == "run":
            command.add_argument(
                "--backend",
                choices=BACKEND_CHOICES,
                default="auto",
                help="delay emulation (auto: netem, else nfqueue, else none; none at --delay 0)",
            )
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.command is None:
            return _tui()
        handler = {"list": _list, "doctor": _doctor, "simulate": _simulate, "run": _run}
        return handler[args.command](args)
    except UserError as err:
        print(f"tfolab: {err.one_line()}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tfolab: interrupted", file=sys.stderr)
        return 130


def _tui() -> int:
    from tfolab.tui.app import run_app

    return run_app()


def _list(args: argparse.Namespace) -> int:
    from tfolab.labs import load_labs
    from tfolab.report import lab_list

    print(lab_list(load_labs()))
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from tfolab import doctor

    found = doctor.checks()
    print(doctor.report_json(found) if args.json else doctor.report_text(found))
    return 0


def _prepare(args: argparse.Namespace):
    from tfolab import labrun
    from tfolab.labs import find_lab

    delay_ms = labrun.parse_delay(args.delay)
    settings = labrun.parse_set_options(args.set)
    lab = find_lab(args.lab)
    planned = labrun.plan(lab, args.scenario, args.iterations, settings)
    return lab, planned, delay_ms


def _simulate(args: argparse.Namespace) -> int:
    from tfolab import labrun
    from tfolab.ladder_text import render_ladder

    lab, planned, delay_ms = _prepare(args)
    result = labrun.predict(lab, planned, delay_ms)
    if args.json:
        print(json.dumps(result.to_json(), indent=1))
        return 0
    for scenario in result.scenarios:
        print(f"== {lab.name} / {scenario.planned.name}: {scenario.planned.summary}")
        print(render_ladder(scenario.simulation))
        print()
    return 0


def _run(args: argparse.Namespace) -> int:
    from tfolab import labrun, report

    lab, planned, delay_ms = _prepare(args)
    progress = None if args.json else _print_progress
    result = asyncio.run(labrun.run(lab, planned, delay_ms, args.backend, progress))
    if args.json:
        print(json.dumps(result.to_json(), indent=1))
    else:
        print(
            f"\n{lab.title}: {report.delay_words(delay_ms)}, backend {result.backend}, "
            f"kernel {result.kernel}, setup {result.setup_ms:.0f} ms"
        )
        for note in result.notes:
            print(f"  note: {note}")
        print()
        print(report.results_table(result))
        print()
        print(report.counters_text(result))
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
    if result.backend == "none" and delay_ms > 0:
        print(
            "tfolab: WARNING: no delay emulation ran; the measurements are plain loopback",
            file=sys.stderr,
        )
    return 1 if result.failures else 0


def _print_progress(event: dict) -> None:
    kind = event.get("event")
    if kind == "setup":
        line = (
            f"lab network ready in {event['setup_ms']} ms: backend {event['backend']}, "
            f"namespace via {event['namespace']}"
        )
        if event["backend"] == "none":
            line += "  ** NO DELAY EMULATION: plain loopback **"
    elif kind == "scenario":
        line = f"running {event['name']} ..."
    elif kind == "iteration":
        line = f"  {event['scenario']} #{event['i']}: {event['measured_ms']:.1f} ms"
    elif kind == "note":
        line = f"  {event['text']}"
    else:
        return
    print(line, file=sys.stderr, flush=True)
