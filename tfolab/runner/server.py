"""Start the native echo server inside the lab namespace and wait for READY.

Rules: the server always runs with --die-with-parent, so it cannot outlive the
runner; `stop` is idempotent and always reaps the process. `stats()` asks the
running server what its application did (SIGUSR1: one STATS line on stdout). A
lab scenario's server stamps its calls into a memory file this process holds
(`--stamp-fd`, tfolab.runner.app_calls); `calls()` reads them.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
from dataclasses import dataclass

from tfolab.core.errors import UserError
from tfolab.model.scenario import ScenarioConfig
from tfolab.runner.app_calls import ServerStamp, read_stamps

READY_TIMEOUT_S = 5.0
STATS_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class AppStats:
    """What the echo server's application did since it started (struct tfl_server_stats)."""

    accepted: int  # connections accept()ed
    requests: int  # request lines received
    bytes_received: int
    closed: int

    def since(self, before: AppStats) -> AppStats:
        return AppStats(
            self.accepted - before.accepted,
            self.requests - before.requests,
            self.bytes_received - before.bytes_received,
            self.closed - before.closed,
        )


def parse_stats(line: str) -> AppStats | None:
    """'STATS accepted=2 requests=2 bytes=32 closed=1' -> AppStats; None if not that."""
    words = line.split()
    if not words or words[0] != "STATS":
        return None
    try:
        fields = dict(word.split("=", 1) for word in words[1:])
        return AppStats(
            int(fields["accepted"]),
            int(fields["requests"]),
            int(fields["bytes"]),
            int(fields["closed"]),
        )
    except (KeyError, ValueError):
        return None


# Both ends use CUBIC, Linux's default, whatever the host's default is (BBR on
# some): the model paces as CUBIC does (model/pacing.py). Set per socket
# (TCP_CONGESTION), which a lab namespace's root may do for any built-in one;
# the namespace's default may only be one of tcp_allowed_congestion_control.
LAB_CONGESTION_CONTROL = "cubic"


def server_args(executable: str, config: ScenarioConfig) -> list[str]:
    # Any loopback address reaches it: scenarios may use a fresh 127.0.0.N (see
    # scenario_run.LabNetwork); the namespace holds nothing else to expose it to.
    args = [executable, "--bind", "0.0.0.0", "--port", "0", "--mode", "line", "--die-with-parent"]
    args += ["--congestion", LAB_CONGESTION_CONTROL]
    if config.server_fastopen_qlen > 0:
        args += ["--tfo", str(config.server_fastopen_qlen)]
    if config.server_quickack:
        args.append("--quickack")
    if config.response_bytes:
        args += ["--response-bytes", str(config.response_bytes)]
    return args


@dataclass
class EchoServer:
    process: subprocess.Popen[str]
    port: int
    stamp_fd: int | None = None  # the memory file its call stamps go to (None: not stamped)

    def calls(self) -> list[ServerStamp]:
        """The calls the server stamped so far (none where it does not stamp)."""
        return read_stamps(self.stamp_fd) if self.stamp_fd is not None else []

    def stats(self) -> AppStats:
        """Ask the server (SIGUSR1) for its STATS line; UserError if it does not answer."""
        assert self.process.stdout is not None
        self.process.send_signal(signal.SIGUSR1)
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            ready = selector.select(STATS_TIMEOUT_S)
        stats = parse_stats(self.process.stdout.readline()) if ready else None
        if stats is None:
            raise UserError(
                "the echo server did not report what its application received",
                "reinstall tfolab (pip install -e .) so the native tools are rebuilt",
            )
        return stats

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.stamp_fd is not None:
            os.close(self.stamp_fd)
            self.stamp_fd = None


def start_server(executable: str, config: ScenarioConfig) -> EchoServer:
    """A scenario's echo server, its calls stamped."""
    stamp_fd = os.memfd_create("tfolab-server-calls", os.MFD_CLOEXEC)
    try:
        args = [*server_args(executable, config), "--stamp-fd", str(stamp_fd)]
        return start_server_process(args, stamp_fd)
    except BaseException:
        os.close(stamp_fd)
        raise


def start_server_process(args: list[str], stamp_fd: int | None = None) -> EchoServer:
    """Start tfo-echo-server with these arguments and wait for its READY line;
    `stamp_fd` is handed over as it is numbered (its --stamp-fd)."""
    process = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # an autogroup at nice 0, not a waiting UI's (core/autogroup)
        pass_fds=() if stamp_fd is None else (stamp_fd,),
    )
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        ready = selector.select(READY_TIMEOUT_S)
    line = process.stdout.readline().split() if ready else []
    if len(line) == 2 and line[0] == "READY" and line[1].isdigit():
        return EchoServer(process, int(line[1]), stamp_fd)
    process.kill()
    _, err = process.communicate(timeout=5)
    raise UserError(
        f"the echo server did not start: {err.strip() or 'no READY line'}",
        "run `tfolab doctor` to check the native parts",
    )
