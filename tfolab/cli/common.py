"""What several commands share: the --labs-dir and --slots-dir flags, the lab/scenario
flags, and the one place that checks them all before anything runs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from tfolab.cli import plots

if TYPE_CHECKING:
    from tfolab.lab.plan import LabPlan


def labs_dir_argument(parser: argparse.ArgumentParser, *, top: bool) -> None:
    parser.add_argument(
        "--labs-dir",
        metavar="DIR",
        # On a command it may repeat the global flag; only a given value overrides.
        default=None if top else argparse.SUPPRESS,
        help="read the lab files from DIR (default: $TFOLAB_LABS_DIR, else the installed labs)",
    )


def slots_dir_argument(
    parser: argparse.ArgumentParser,
    *,
    top: bool,
    help: str = "the measurement slots folder this command's runs queue in",
) -> None:
    parser.add_argument(
        "--slots-dir",
        metavar="DIR",
        type=Path,
        default=None if top else argparse.SUPPRESS,  # as --labs-dir: before or after the command
        help=f"{help} (default: $TFOLAB_SLOTS_DIR, not as root, else the machine's shared "
        "one, which every tfolab run uses)",
    )


def max_delay_ms() -> float:
    from tfolab.model.scenario import MAX_DELAY_MS

    return MAX_DELAY_MS


def delay_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--delay",
        default="10",
        metavar="MS",
        help=f"one-way delay added to every packet, ms (RTT = 2 x delay; 0 to {max_delay_ms():g})",
    )


def scenario_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `simulate` and `run`: which lab, which scenarios, at what delay."""
    parser.add_argument(
        "lab", help="handshake, fastopen, delack, transfer, loss (see `tfolab list`)"
    )
    delay_argument(parser)
    parser.add_argument("--scenario", metavar="NAME", help="one scenario (default: all)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scenario setting (repeatable)",
    )
    parser.add_argument(
        "--iterations",
        type=int,
        metavar="N",
        help="iterations per scenario (default: the lab's; a replay scenario runs at least "
        "2: one to replay, then the replay)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object")
    parser.add_argument(
        "--pcap",
        metavar="FILE",
        help="write the kernel's captured packets (run) or the model's predicted ones "
        "(simulate) to FILE, for tcpdump -r or Wireshark",
    )
    plots.add_arguments(parser)


def parse_set_options(pairs: list[str]) -> dict[str, str]:
    """Every --set KEY=VALUE as a dict (the values are typed by the scenario schema later)."""
    from tfolab.core.errors import UserError

    settings: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--set {pair!r} is not KEY=VALUE", "e.g. --set nodelay=true")
        settings[key.strip()] = value.strip()
    return settings


def prepare(args: argparse.Namespace) -> LabPlan:
    """Every check of the input, before anything runs: UserError on the first problem."""
    from tfolab.lab.catalog import find_lab
    from tfolab.lab.delay import parse_delay
    from tfolab.lab.plan import plan

    delay_ms = parse_delay(args.delay)
    settings = parse_set_options(args.set)
    lab = find_lab(args.lab, args.labs_dir)
    if args.pcap:
        from tfolab.lab.pcap import check_writable

        check_writable(args.pcap)  # before anything runs
    plots.check(args)
    return plan(lab, args.scenario, args.iterations, settings, delay_ms=delay_ms)
