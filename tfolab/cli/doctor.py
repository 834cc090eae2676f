"""`tfolab doctor`: what this machine can do, and the fix for each gap."""

from __future__ import annotations

import argparse

NAME = "doctor"
HELP = "what this machine can do"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable report")


def handle(args: argparse.Namespace) -> int:
    from tfolab.lab import doctor

    found = doctor.checks()
    print(doctor.report_json(found) if args.json else doctor.report_text(found))
    return 0
