"""The command line: `tfolab [list|doctor|simulate|run|...]`, over the same layers as the UI.

Each command is one module here with NAME, HELP, add_arguments(parser) and
handle(args) -> int; COMMANDS lists them in the order `--help` shows them.
Rules: every user mistake or unusable environment is a UserError, printed as
one line (`tfolab: <reason>; fix: <fix>`) with exit code 2; a measurement
outside its band exits 1; anything else is a bug of ours: one line naming it
and the file that holds the details (crash.py), exit code 3. Commands and
flags follow docs/DESIGN.md, "Contracts".
"""

from __future__ import annotations

import argparse
import os
import sys
from types import ModuleType
from typing import NoReturn

from tfolab.cli import bench, crash, doctor, grade, listing, run, serve, simulate
from tfolab.cli.common import labs_dir_argument, slots_dir_argument
from tfolab.cli.root_env import SLOTS, check_inherited_folders
from tfolab.core.errors import UserError

COMMANDS: tuple[ModuleType, ...] = (listing, doctor, simulate, run, bench, serve, grade)


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

started as root:
  The UI, run, bench and serve take no folder from TFOLAB_LABS_DIR,
  TFOLAB_SLOTS_DIR or TFOLAB_RESULTS_DIR (root's environment may carry a
  folder root never chose): one line says which flag to use instead
  (--labs-dir, --slots-dir; serve --results).

predictions:
  Without --demo the UI asks for predictions before it shows a scenario's
  ladder, and grades them. Graded attempts are saved as JSON in the folder
  given in the UI, or $TFOLAB_RESULTS_DIR; `tfolab grade DIR` summarises them.

exit codes: 0 done, 1 a measurement fell outside its predicted band,
  2 bad input or an unusable machine (one line on stderr: `tfolab: ...`),
  3 an internal error (one line naming the file with its details).
"""


def version() -> str:
    from importlib import metadata  # here, not at the top: 18 ms that the UI's start waits for

    try:
        return metadata.version("tfolab")
    except metadata.PackageNotFoundError:
        import tfolab

        return str(getattr(tfolab, "__version__", "unknown"))


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tfolab",
        description="An interactive TCP teaching lab. Without a command it opens the terminal UI.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument(
        "--demo",
        action="store_true",
        help="the UI without predictions first (for teachers who demonstrate)",
    )
    labs_dir_argument(parser, top=True)
    slots_dir_argument(parser, top=True)
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)
    for command in COMMANDS:
        command.add_arguments(commands.add_parser(command.NAME, help=command.HELP))
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.version:
            print(f"tfolab {version()}")
            return 0
        check_inherited_folders(args.command)  # as root: folders from flags only
        if args.slots_dir is not None and args.command in (None, "run", "bench"):
            os.environ[SLOTS] = str(args.slots_dir)  # what their runners read (serve sets its own)
        if getattr(args, "labs_dir", None) is not None:
            from tfolab.lab.catalog import check_labs_dir

            args.labs_dir = check_labs_dir(args.labs_dir)
        if args.command is None:
            return _tui(args)
        handlers = {command.NAME: command.handle for command in COMMANDS}
        result: int = handlers[args.command](args)
        return result
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
    except Exception as err:
        print(crash.report(err, list(sys.argv[1:] if argv is None else argv), version()),
              file=sys.stderr)  # fmt: skip
        return crash.EXIT_INTERNAL_ERROR


def _tui(args: argparse.Namespace) -> int:
    from tfolab.lab.catalog import LABS_DIR_ENV
    from tfolab.tui.app import run_app

    if args.labs_dir is not None:
        # The UI loads its labs itself: the variable is how it learns the folder.
        os.environ[LABS_DIR_ENV] = str(args.labs_dir)
    return run_app(demo=args.demo)
