"""`tfolab list`: the labs and their scenarios, broken lab files too."""

from __future__ import annotations

import argparse

from tfolab.cli.common import labs_dir_argument

NAME = "list"
HELP = "the labs and their scenarios"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    labs_dir_argument(parser, top=False)


def handle(args: argparse.Namespace) -> int:
    from tfolab.lab.catalog import load_labs
    from tfolab.view.report import lab_list

    labs = load_labs(args.labs_dir)
    print(lab_list(labs, labs.broken))
    return 0
