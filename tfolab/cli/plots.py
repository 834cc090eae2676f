"""--plot and --plot-svg of `simulate` and `run`: the time-sequence graphs of a result.

Rules: the flags are checked with the rest of the input, before anything runs
(`check`): --plot draws in the terminal, so it does not combine with --json's
one JSON object; --plot-svg's file must be writable. The picture is written
with O_NOFOLLOW: a symbolic link in its place is refused, not followed.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from tfolab.core.errors import UserError

if TYPE_CHECKING:
    from tfolab.lab.results import LabResult


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--plot",
        action="store_true",
        help="draw each scenario's time-sequence graph in the terminal (the model's, and "
        "for run the kernel's below it on the same axes)",
    )
    parser.add_argument(
        "--plot-svg",
        metavar="FILE",
        help="write the same graphs as an SVG picture (model left, kernel right)",
    )


def check(args: argparse.Namespace) -> None:
    if args.plot and args.json:
        raise UserError(
            "--plot draws in the terminal and --json prints one JSON object: they do not combine",
            "use --plot-svg FILE with --json",
        )
    if args.plot_svg:
        from tfolab.lab.pcap import check_writable

        target = check_writable(args.plot_svg, flag="--plot-svg", example="graph.svg")
        if target.is_symlink():
            raise UserError(
                f"--plot-svg {args.plot_svg}: a symbolic link, never followed",
                "give the picture's own path",
            )


def emit(args: argparse.Namespace, lab_name: str, result: LabResult) -> None:
    """Print and write what the flags asked for."""
    if not (args.plot or args.plot_svg):
        return
    from tfolab.view.seq_report import graph_rows

    rows = graph_rows(lab_name, result)
    if args.plot:
        from tfolab.view.seq_plot import plot_text

        for row in rows:
            print(f"\n{row.heading}")
            print(plot_text(row.model, row.kernel, color=sys.stdout.isatty()))
    if args.plot_svg:
        from tfolab.view.seq_svg import svg_document

        _write_new_text(args.plot_svg, svg_document(rows))
        drawn = f"{len(rows)} graph{'' if len(rows) == 1 else 's'}"
        print(f"tfolab: {drawn} written to {args.plot_svg}", file=sys.stderr)


def _write_new_text(path: str, text: str) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(os.path.expanduser(path), flags, 0o644)
    except OSError as err:
        raise UserError(
            f"--plot-svg {path}: cannot write it ({err.strerror})",
            "choose another path (a symbolic link is never followed)",
        ) from None
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
