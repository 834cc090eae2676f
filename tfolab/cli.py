"""The command line: `tfolab [list|doctor|simulate|run]`, over the same layers as the UI.

Rules: every user mistake or unusable environment is a UserError, printed as
one line (`tfolab: <reason> (<fix>)`) with exit code 2; a measurement outside
its band exits 1. Commands and flags follow docs/DESIGN.md, "Contracts".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from importlib import metadata
from typing import TYPE_CHECKING, NoReturn

from tfolab.core.errors import UserError
from tfolab.runner.backends import BACKEND_CHOICES

if TYPE_CHECKING:
    from tfolab.lab.catalog import Lab
    from tfolab.lab.session import LabResult, PlannedScenario
    from tfolab.runner.protocol import Event


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UserError(message, f"see `{self.prog} --help`")


EPILOG = """\
lab files:
  The labs are the *.toml files (and their guides) in a labs folder: by default
  the one installed with tfolab. --labs-dir DIR, or the environment variable
  TFOLAB_LABS_DIR=DIR, reads them from DIR instead (--labs-dir wins). A lab
  file that does not load is listed by `tfolab list` as BROKEN, with the file,
  line and problem; the other labs still work.

exit codes: 0 done, 1 a measurement fell outside its predicted band,
  2 bad input or an unusable machine (one line on stderr: `tfolab: ...`).
"""


def version() -> str:
    try:
        return metadata.version("tfolab")
    except metadata.PackageNotFoundError:
        import tfolab

        return str(getattr(tfolab, "__version__", "unknown"))


def _labs_dir_argument(parser: argparse.ArgumentParser, *, top: bool) -> None:
    parser.add_argument(
        "--labs-dir",
        metavar="DIR",
        # On a command it may repeat the global flag; only a given value overrides.
        default=None if top else argparse.SUPPRESS,
        help="read the lab files from DIR (default: $TFOLAB_LABS_DIR, else the installed labs)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tfolab",
        description="An interactive TCP teaching lab. Without a command it opens the terminal UI.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    _labs_dir_argument(parser, top=True)
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)
    listing = commands.add_parser("list", help="the labs and their scenarios")
    _labs_dir_argument(listing, top=False)
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
            help="one-way delay added to every packet, ms (RTT = 2 x delay; 0 to "
            f"{max_delay_ms():g})",
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
        command.add_argument(
            "--pcap",
            metavar="FILE",
            help="write the kernel's captured packets (run) or the model's predicted ones "
            "(simulate) to FILE, for tcpdump -r or Wireshark",
        )
        if name == "simulate":
            command.add_argument(
                "--ladder",
                action="store_true",
                help="print every scenario's ladder diagram (default: a summary table; "
                "--scenario NAME prints that scenario's ladder)",
            )
        if name == "run":
            command.add_argument(
                "--backend",
                choices=BACKEND_CHOICES,
                default="auto",
                help="delay emulation (auto: netem, else nfqueue, else none; none at --delay 0 "
                "only: it adds no delay)",
            )
        _labs_dir_argument(command, top=False)
    return parser


def max_delay_ms() -> float:
    from tfolab.model.scenario import MAX_DELAY_MS

    return MAX_DELAY_MS


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.version:
            print(f"tfolab {version()}")
            return 0
        if args.labs_dir is not None:
            from tfolab.lab.catalog import check_labs_dir

            args.labs_dir = check_labs_dir(args.labs_dir)
        if args.command is None:
            return _tui(args)
        handler = {"list": _list, "doctor": _doctor, "simulate": _simulate, "run": _run}
        return handler[args.command](args)
    except UserError as err:
        print(f"tfolab: {err.one_line()}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tfolab: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`tfolab list | head`): not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _tui(args: argparse.Namespace) -> int:
    from tfolab.lab.catalog import LABS_DIR_ENV
    from tfolab.tui.app import run_app

    if args.labs_dir is not None:
        # The UI loads its labs itself: the variable is how it learns the folder.
        os.environ[LABS_DIR_ENV] = str(args.labs_dir)
    return run_app()


def _list(args: argparse.Namespace) -> int:
    from tfolab.lab.catalog import load_labs
    from tfolab.view.report import lab_list

    labs = load_labs(args.labs_dir)
    print(lab_list(labs, labs.broken))
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from tfolab.lab import doctor

    found = doctor.checks()
    print(doctor.report_json(found) if args.json else doctor.report_text(found))
    return 0


def _prepare(args: argparse.Namespace) -> tuple[Lab, list[PlannedScenario], float]:
    """Every check of the input, before anything runs: UserError on the first problem."""
    from tfolab.lab import session
    from tfolab.lab.catalog import find_lab

    delay_ms = session.parse_delay(args.delay)
    settings = session.parse_set_options(args.set)
    lab = find_lab(args.lab, args.labs_dir)
    if args.pcap:
        from tfolab.lab.pcap import check_writable

        check_writable(args.pcap)  # before anything runs
    planned = session.plan(lab, args.scenario, args.iterations, settings)
    if args.command == "run":
        session.check_run(planned, delay_ms, args.backend)
    return lab, planned, delay_ms


def _simulate(args: argparse.Namespace) -> int:
    from tfolab.lab import session
    from tfolab.view import report
    from tfolab.view.ladder_text import render_ladder

    lab, planned, delay_ms = _prepare(args)
    result = session.predict(lab, planned, delay_ms)
    if args.pcap:
        from tfolab.lab import pcap

        written = pcap.write_simulated(
            pcap.check_writable(args.pcap), (s.simulation for s in result.scenarios)
        )
        print(f"tfolab: {written} predicted packets written to {args.pcap}", file=sys.stderr)
    if args.json:
        print(json.dumps(result.to_json(), indent=1))
        return 0
    if not (args.scenario or args.ladder):
        print(report.simulation_summary(lab, result))
        return 0
    for scenario in result.scenarios:
        print(report.scenario_heading(lab, scenario))
        print(render_ladder(scenario.simulation))
        print()
    return 0


def _run(args: argparse.Namespace) -> int:
    from tfolab.lab import session
    from tfolab.view import report

    lab, planned, delay_ms = _prepare(args)
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
    for name, sentence in result.packet_failures:
        print(f"tfolab: {lab.name}/{name}: {sentence}", file=sys.stderr)
    return 1 if result.failures or result.packet_failures else 0


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
