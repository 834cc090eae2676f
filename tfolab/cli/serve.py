"""`tfolab serve`: the UI in every student's browser, one tfolab process per tab.

Rules:
- Everything is checked before anything starts (host, port, token, user,
  results folder, the class's bounds): a mistake is one line and exit 2.
- Every address needs a token, loopback too (serve_token: --token-file,
  $TFOLAB_SERVE_TOKEN, else generated; never on the command line, where
  every user reads it), and every request a
  Host this machine answers to and no other site's Origin (tui.web_guard).
  The token goes to stdout once, in the ready URL, never to a log.
- The class is bounded (serve_limits, tui.web_sessions): sessions in all and
  per client, an idle timeout, each session's memory and the class's processes.
- Never root on the web side: started as root, serve binds its port, makes
  its private folder (and the results folder) for the unprivileged user, then
  drops to that user (--user, default `tfolab` if it exists, else `nobody`)
  before it listens. Sessions' real runs then go through unprivileged user
  namespaces, as any non-root run does; where those are refused, a real probe
  says so and every session shows why real runs are off.
- Started as root, folders come from flags only, never from TFOLAB_*
  variables in serve's environment (cli.root_env, checked by cli.main).
- Sessions get a private HOME (and XDG folders, TMPDIR, working directory)
  that is removed when serve stops, by SIGTERM or SIGHUP too from the moment
  the folder exists (before the server's own handler takes over); with
  --results DIR they save their runs in DIR (TFOLAB_RESULTS_DIR), and only
  there; DIR is prepared by tfolab.lab.results_folder (no link followed, the
  teacher's group reads).
  Nothing else is written.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shlex
import shutil
import signal
import socket
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from tfolab.cli import serve_limits
from tfolab.cli.common import slots_dir_argument
from tfolab.cli.serve_token import TOKEN_ENV, choose_token
from tfolab.core.errors import UserError

if TYPE_CHECKING:
    from tfolab.core.privileges import Account
    from tfolab.lab.environment import RealRunStatus

NAME = "serve"
HELP = "the UI in a browser, one tfolab session per tab (textual-serve)"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
HOST_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,252})")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        metavar="ADDR",
        help=f"address to listen on (default {DEFAULT_HOST}; e.g. 0.0.0.0 for a classroom)",
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, metavar="N", help=f"port (default {DEFAULT_PORT})"
    )
    parser.add_argument("--token", help=argparse.SUPPRESS)  # refused: ps shows it (serve_token)
    parser.add_argument(
        "--token-file",
        metavar="FILE",
        help="read the secret every browser needs from FILE (8+ letters, digits, - or _; a "
        f"file only you may read, e.g. chmod 600), else from ${TOKEN_ENV}; generated and "
        "printed in the URL if neither is given",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a name students may use in the address besides IP addresses, localhost and "
        "this machine's name (repeatable); other names are refused (DNS rebinding)",
    )
    parser.add_argument(
        "--user",
        metavar="NAME",
        help="started as root, run as this unprivileged user "
        "(default: tfolab if it exists, else nobody)",
    )
    parser.add_argument(
        "--results",
        metavar="DIR",
        help="save every session's real runs (with the name the student types) in DIR",
    )
    slots_dir_argument(
        parser, top=False, help="the measurement slots folder the sessions' runs queue in"
    )
    serve_limits.add_arguments(parser)


def check_hosts(names: list[str]) -> list[str]:
    for name in names:
        if not HOST_NAME.fullmatch(name):
            raise UserError(f"--allow-host {name!r} is not a host name", "give a name like lab-pc")
    return names


def check_user(name: str | None) -> Account | None:
    """The account to drop to (root only); None when serve already runs unprivileged."""
    from tfolab.core.privileges import default_user, find_account

    if os.geteuid() == 0:
        return find_account(name or default_user())
    if name is not None and find_account(name).uid != os.geteuid():
        raise UserError(
            f"--user {name}: only root can switch users, and this is uid {os.geteuid()}",
            "leave --user out (serve already runs unprivileged), or start it as root",
        )
    return None


def bind(host: str, port: int) -> socket.socket:
    """Bind (not listen) while still root, so a port below 1024 works."""
    if not 0 <= port <= 65535:
        raise UserError(f"--port {port} is out of range", "give 1 to 65535 (0: any free port)")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as err:
        raise UserError(
            f"--host {host}: {err.strerror}", "give an address of this machine"
        ) from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as err:
        sock.close()
        raise UserError(
            f"cannot listen on {host}:{port}: {err.strerror}",
            "pick another --port (or stop what uses it)",
        ) from None
    return sock


def ready_url(host: str, port: int, token: str) -> str:
    shown = host
    if host in ("0.0.0.0", "::", ""):
        shown = socket.gethostname()
    elif ":" in host:
        shown = f"[{host}]"
    return f"http://{shown}:{port}/?token={token}"


def private_home(account: Account | None) -> Path:
    """The sessions' HOME, TMPDIR and working folder: private, removed at the end."""
    home = Path(tempfile.mkdtemp(prefix="tfolab-serve-"))
    if account is not None:
        os.chown(home, account.uid, account.gid)
    return home


def session_environment(home: Path, results: Path | None) -> dict[str, str]:
    env = {
        "HOME": str(home),
        "TMPDIR": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"),
    }
    if results is not None:
        from tfolab.lab.results_dir import RESULTS_DIR_ENV

        env[RESULTS_DIR_ENV] = str(results)
    return env


def probe_real_runs() -> RealRunStatus:
    """Whether the sessions' user can run for real: the quick look, then a real namespace probe."""
    from tfolab.lab.environment import RealRunStatus, quick_check
    from tfolab.runner.probe import ProbeFailed, run_probe

    status = quick_check()
    if not status.possible:
        return status
    try:
        report = run_probe()
    except ProbeFailed as err:
        return RealRunStatus(False, f"the namespace probe failed ({err})", "run `tfolab doctor`")
    if report.namespace_error is not None:
        return RealRunStatus(
            False,
            report.namespace_error,
            "The model and the ladders still work; "
            "allow unprivileged user namespaces for real runs (see `tfolab doctor`).",
        )
    return status


def check_interpreter(account: Account | None) -> None:
    """After the drop: this Python, its library and tfolab must be readable by the user."""
    import tfolab

    needed = [
        Path(sys.executable).resolve(),
        Path(os.__file__).resolve().parent,
        Path(tfolab.__file__).resolve().parent,
    ]
    for path in needed:
        if not os.access(path, os.R_OK | os.X_OK):
            who = account.name if account else "this user"
            raise UserError(
                f"{who} cannot read {path}, so its sessions could not start",
                "install tfolab with a Python every user can read (e.g. a venv made with "
                "/usr/bin/python3 -m venv), or give --user a user who can read it",
            )


def handle(args: argparse.Namespace) -> int:
    from tfolab.core import autogroup
    from tfolab.core.privileges import drop_to
    from tfolab.lab.environment import REAL_RUNS_OFF_ENV
    from tfolab.lab.results_folder import check_results, prepare_results
    from tfolab.runner.served_class import SERVED_BY_ENV
    from tfolab.tui.web import STOP_SIGNALS, ClassroomServer  # all the server needs, as root
    from tfolab.tui.web_guard import host_names

    token = choose_token(args.token, args.token_file)
    limits = serve_limits.session_limits(args)
    hosts = host_names(check_hosts(args.allow_host))
    results = check_results(args.results)
    account = check_user(args.user)
    sock = bind(args.host, args.port)
    # a stop signal before ClassroomServer handles it (it may come the moment the URL is
    # printed) unwinds through `finally`, which removes the sessions' folder; SIGINT's
    # KeyboardInterrupt does already
    early = [signum for signum in STOP_SIGNALS if signum != signal.SIGINT]
    for signum in early:
        signal.signal(signum, _stop_now)
    home: Path | None = None
    try:
        home = private_home(account)
        prepare_results(results, account)
        if args.slots_dir is not None:  # checked below like any slots folder, as root first
            from tfolab.core.slots import DIR_ENV

            os.environ[DIR_ENV] = str(args.slots_dir)
        if account is not None:  # as root: the measurement slots are made root's
            from tfolab.core.slots import SlotTable

            SlotTable.open()

        def drop_privileges() -> None:
            if account is not None:
                drop_to(account)

        # Every session, and the relay of their screens, yields to measuring runs.
        autogroup.lead_low_group(in_the_waiter=drop_privileges)
        drop_privileges()
        check_interpreter(account)
        if results is not None and not os.access(results, os.W_OK | os.X_OK):
            raise UserError(
                f"--results {results} is not writable by {account.name if account else 'you'}",
                "give that user the folder (chown), or another --results",
            )
        os.environ.update(session_environment(home, results))
        # Its sessions' runs keep the class's UIs off a CPU while measuring (runner.served_class).
        os.environ[SERVED_BY_ENV] = str(os.getpid())
        if args.labs_dir is not None:
            from tfolab.lab.catalog import LABS_DIR_ENV

            os.environ[LABS_DIR_ENV] = str(args.labs_dir)
        real_runs = probe_real_runs()
        if not real_runs.possible:
            os.environ[REAL_RUNS_OFF_ENV] = real_runs.off_value()
        os.chdir(home)
        sock.listen(128)  # unprivileged now; early browsers wait in the backlog until served
        _announce(sock, args.host, token, account, results, real_runs)
        command = shlex.join([sys.executable, "-m", "tfolab"])
        ClassroomServer(command, sock, token, "tfolab", hosts, limits).serve()
    finally:
        for signum in early:  # stopping already: finish the cleanup
            signal.signal(signum, signal.SIG_IGN)
        sock.close()
        if home is not None:
            with contextlib.suppress(OSError):
                shutil.rmtree(home)
    return 0


def _stop_now(_signum: int, _frame: object) -> None:
    raise SystemExit(0)


def _announce(
    sock: socket.socket,
    host: str,
    token: str,
    account: Account | None,
    results: Path | None,
    real_runs: RealRunStatus,
) -> None:
    port = sock.getsockname()[1]
    print(f"tfolab serve: open {ready_url(host, port, token)} (one lab session per browser tab)")
    who = account.name if account else f"uid {os.geteuid()}"
    runs = "on (unprivileged user namespaces)" if real_runs.possible else f"off: {real_runs.reason}"
    print(f"  sessions run as {who}; real runs {runs}")
    if results is not None:
        print(f"  class results are saved in {results}")
    print("  Ctrl+C stops serving", flush=True)
