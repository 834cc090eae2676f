"""tfo-echo-server --tfo warns on stderr when the namespace's sysctl makes it a no-op.

The kernel accepts setsockopt(TCP_FASTOPEN) whatever net.ipv4.tcp_fastopen says,
but answers SYN data only when the listener's namespace has the server bit 0x2
(0x400, "every listener", does nothing without it). Each case runs in a fresh
namespace with its own sysctl; the host's is never touched. stdout stays exactly
"READY <port>".
"""

from __future__ import annotations

import re
import selectors
import subprocess

import pytest

from tests.native.netns import run_in_netns
from tests.native.support import TIMEOUT_S
from tfolab.core import native

WARNING = "tfo-echo-server: warning: --tfo has no effect"


def _server_output(*flags: str) -> tuple[int, str, str]:
    """Start the server, wait for READY, SIGTERM it: exit code, all of stdout, stderr."""
    exe = native.executable_path("tfo-echo-server")
    process = subprocess.Popen(
        [str(exe), "--port", "0", *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            ready = selector.select(10)
        first = process.stdout.readline() if ready else ""
        process.terminate()
        out, err = process.communicate(timeout=TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=TIMEOUT_S)
    return process.returncode, first + out, err


def _is_ready_only(out: str) -> bool:
    return re.fullmatch(r"READY [0-9]+\n", out) is not None


@pytest.mark.parametrize(
    ("sysctl", "shown", "advice"),
    [("1", "0x1", "3"), ("0", "0x0", "3"), ("1025", "0x401", "1027")],
)
def test_tfo_without_server_bit_warns_once(sysctl: str, shown: str, advice: str) -> None:
    code, out, err = run_in_netns(
        _server_output, "--tfo", "16", sysctls={"net.ipv4.tcp_fastopen": sysctl}
    )
    assert code == 0
    assert _is_ready_only(out), out
    lines = err.splitlines()
    assert lines == [
        f"{WARNING}: net.ipv4.tcp_fastopen is {shown} in this network namespace (needs 0x2); "
        f"set it with sysctl -w net.ipv4.tcp_fastopen={advice} in a throwaway namespace"
    ], err


@pytest.mark.parametrize("sysctl", ["3", "2", "1027"])
def test_tfo_with_server_bit_is_silent(sysctl: str) -> None:
    code, out, err = run_in_netns(
        _server_output, "--tfo", "16", sysctls={"net.ipv4.tcp_fastopen": sysctl}
    )
    assert (code, err) == (0, "")
    assert _is_ready_only(out), out


def test_no_tfo_flag_no_check() -> None:
    code, out, err = run_in_netns(_server_output, sysctls={"net.ipv4.tcp_fastopen": "1"})
    assert (code, err) == (0, "")
    assert _is_ready_only(out), out
