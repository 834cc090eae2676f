"""`tfolab grade DIR [--json | --csv]`: a class's saved predictions, per student and scenario."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tfolab.core.errors import UserError

NAME = "grade"
HELP = "summarise a class's saved prediction attempts (per student and per scenario)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dir", metavar="DIR", help="the folder the attempts were saved in (TFOLAB_RESULTS_DIR)"
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="one JSON object")
    output.add_argument("--csv", action="store_true", help="CSV, one row per student and scenario")


def handle(args: argparse.Namespace) -> int:
    from tfolab.lab.class_results import load_class
    from tfolab.view import grade_report

    if not str(args.dir).strip():
        raise UserError("no results folder given", "tfolab grade DIR")
    results = load_class(Path(args.dir).expanduser())
    if args.json:
        print(json.dumps(grade_report.to_json(results), indent=2))
    elif args.csv:
        print(grade_report.to_csv(results), end="")
    else:
        print(grade_report.table(results))
    return 0
