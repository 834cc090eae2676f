"""Bad input to the executables: one clear line on stderr, exit code 2, no crash.

Runtime failures (nothing listening) are exit 1, in test_executables.py. The
checks that need no socket run anywhere; port-in-use runs inside a namespace.
"""

from __future__ import annotations

import pytest

from tests.native.netns import run_in_netns
from tests.native.support import echo_server, no_sanitizer_report, run
from tfolab.core import native

SERVER_CASES = [
    (["--frob"], "unknown option '--frob'"),
    (["stray"], "unexpected argument 'stray'"),
    (["--port"], "--port needs a value, e.g. --port 5000"),
    (["--port", "--tfo", "3"], "--port needs a value"),
    (["--port", "http"], "--port 'http' is not a number"),
    (["--port", "70000"], "--port 70000 is out of range"),
    (["--port", "99999999999999999999999"], "out of range"),
    (["--port="], "--port needs a value"),
    (["--tfo", "-1"], "--tfo -1 is out of range"),
    (["--mode", "udp"], "--mode 'udp' is not a mode: use echo, line or http"),
    (["--bind", "1.2.3"], "bad bind address '1.2.3'"),
    (["--bind", "example.org"], "bad bind address 'example.org'"),
    (["--bind", "a" * 5000], "is too long"),
    (["--quickack=yes"], "--quickack takes no value"),
    (["--max-conns", "x"], "--max-conns 'x' is not a number"),
    (["--stamp-fd", "999"], "--stamp-fd 999 is not a descriptor open for writing"),
    (["--stamp-fd", "-1"], "--stamp-fd -1 is out of range"),
]
CLIENT_CASES = [
    ([], "missing --connect HOST:PORT"),
    (["--connect"], "--connect needs a value"),
    (["--connect", "127.0.0.1"], "is not HOST:PORT"),
    (["--connect", "127.0.0.1:"], "is not a number"),
    (["--connect", "::1:5000"], "is ambiguous: write IPv6 as [::1]:5000"),
    (["--connect", "[fe80::zz]:5000"], "bad address 'fe80::zz'"),
    (["--connect", "[::1:5000"], "write IPv6 as [::1]:5000"),
    (["--connect", "300.1.1.1:5000"], "bad address '300.1.1.1'"),
    (["--connect", "x" * 5000 + ":1"], "bad host"),
    (["--connect", "127.0.0.1:0"], "out of range"),
    (["--connect", "127.0.0.1:1", "--payload", "1048577"], "--payload 1048577 is out of range"),
    (["--connect", "127.0.0.1:1", "--payload", "0"], "out of range"),
    (["--connect", "127.0.0.1:1", "--payload", "1e3"], "is not a number"),
    (["--connect", "127.0.0.1:1", "--pattern", "rrr"], "use rr or wwr"),
    (["--connect", "127.0.0.1:1", "--tfo", "--tfo-connect"], "pick one"),
    (["--connect", "127.0.0.1:1", "--cork"], "--cork applies to --pattern wwr only"),
    (["--connect", "127.0.0.1:1", "--pattern", "wwr", "--payload", "9"], "--payload applies"),
    (
        [
            "--connect",
            "127.0.0.1:1",
            "--pattern",
            "wwr",
            "--first-write",
            "1048000",
            "--second-write",
            "1000",
        ],
        "at most 1048576 together",
    ),
    (
        ["--connect", "127.0.0.1:1", "--pattern", "wwr", "--single-write", "--msg-more"],
        "do not combine",
    ),
    (
        ["--connect", "127.0.0.1:1", "--iterations", "1000", "--connections", "1000"],
        "at most 100000",
    ),
    (["--connect", "127.0.0.1:1", "--timeout-ms", "-5"], "out of range"),
    (["--connect", "127.0.0.1:1", "--json=1"], "--json takes no value"),
    (["--connect", "127.0.0.1:1", "-v"], "unexpected argument '-v'"),
]


def assert_bad_input(args: list[str], expected: str, name: str) -> None:
    done = run([str(native.executable_path(name)), *args])
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"{name}: ")
    assert expected in done.stderr, done.stderr
    assert no_sanitizer_report(done.stderr)


@pytest.mark.parametrize(("args", "expected"), SERVER_CASES)
def test_server_bad_input(args: list[str], expected: str) -> None:
    assert_bad_input(args, expected, "tfo-echo-server")


@pytest.mark.parametrize(("args", "expected"), CLIENT_CASES)
def test_client_bad_input(args: list[str], expected: str) -> None:
    assert_bad_input(args, expected, "tfo-echo-client")


def _port_in_use_body() -> None:
    with echo_server() as (_, port):
        assert_bad_input(["--port", str(port)], "already in use (EADDRINUSE)", "tfo-echo-server")
    assert_bad_input(["--bind", "10.1.2.3"], "EADDRNOTAVAIL", "tfo-echo-server")


def test_server_port_in_use_and_foreign_address() -> None:
    run_in_netns(_port_in_use_body)
