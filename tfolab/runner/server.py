"""Start the native echo server inside the lab namespace and wait for READY.

Rules: the server always runs with --die-with-parent, so it cannot outlive the
runner; `stop` is idempotent and always reaps the process.
"""

from __future__ import annotations

import selectors
import subprocess
from dataclasses import dataclass

from tfolab.core.errors import UserError
from tfolab.model.scenario import ScenarioConfig

READY_TIMEOUT_S = 5.0


def server_args(executable: str, config: ScenarioConfig) -> list[str]:
    # Any loopback address reaches it: scenarios may use a fresh 127.0.0.N (see
    # scenario_run.LabNetwork); the namespace holds nothing else to expose it to.
    args = [executable, "--bind", "0.0.0.0", "--port", "0", "--mode", "line", "--die-with-parent"]
    if config.server_fastopen_qlen > 0:
        args += ["--tfo", str(config.server_fastopen_qlen)]
    if config.server_quickack:
        args.append("--quickack")
    return args


@dataclass
class EchoServer:
    process: subprocess.Popen[str]
    port: int

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_server(executable: str, config: ScenarioConfig) -> EchoServer:
    return start_server_process(server_args(executable, config))


def start_server_process(args: list[str]) -> EchoServer:
    """Start tfo-echo-server with these arguments and wait for its READY line."""
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        ready = selector.select(READY_TIMEOUT_S)
    line = process.stdout.readline().split() if ready else []
    if len(line) == 2 and line[0] == "READY" and line[1].isdigit():
        return EchoServer(process, int(line[1]))
    process.kill()
    _, err = process.communicate(timeout=5)
    raise UserError(
        f"the echo server did not start: {err.strip() or 'no READY line'}",
        "run `tfolab doctor` to check the native parts",
    )
