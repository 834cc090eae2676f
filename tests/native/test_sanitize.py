"""A sanitizer build (ASan + UBSan) of native/ runs every path without a report.

Configures and builds native/ with -DTFOLAB_SANITIZE=ON into a temporary
directory, then drives the server and client executables (rr, wwr, TFO, http,
the bench client's concurrent GETs plain and TFO, an overlong line, bad input)
inside a namespace and checks stderr for any
sanitizer report. Leak checking is on: the server exits through SIGTERM.
"""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.environment import require_or_skip
from tests.native.netns import run_in_netns
from tests.native.support import echo_server, environ_with, no_sanitizer_report, run, stop
from tests.native.test_edges import pipelined_body

NATIVE = Path(__file__).resolve().parents[2] / "native"
SANITIZER_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
}


@pytest.fixture(scope="module")
def sanitized_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # The test extras bring cmake from PyPI into the venv, beside this Python.
    cmake = shutil.which("cmake", path=str(Path(sys.executable).parent)) or shutil.which("cmake")
    if cmake is None:
        require_or_skip("cmake", "not installed: pip install -e '.[test]' brings it")
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        require_or_skip("C compiler", "none (cc/gcc) for the sanitizer build")
    build = tmp_path_factory.mktemp("native-asan")
    configure = subprocess.run(
        [cmake, "-S", str(NATIVE), "-B", str(build), "-DTFOLAB_SANITIZE=ON",
         "-DCMAKE_BUILD_TYPE=Debug"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert configure.returncode == 0, configure.stderr
    compiled = subprocess.run(
        [cmake, "--build", str(build), "--target", "tfo-echo-server", "tfo-echo-client",
         "tfo-bench-client", "--parallel", str(os.cpu_count() or 2)],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert compiled.returncode == 0, compiled.stdout[-3000:] + compiled.stderr[-3000:]
    probe = run([str(build / "tfo-echo-server"), "--help"], env=environ_with(ASAN_OPTIONS="help=1"))
    assert "AddressSanitizer" in probe.stderr, "the build is not instrumented"
    return build


def _check(done: subprocess.CompletedProcess[str], code: int) -> None:
    assert no_sanitizer_report(done.stderr), done.stderr
    assert done.returncode == code, (done.returncode, done.stdout[-500:], done.stderr[-2000:])


def _sanitized_session(build: Path) -> None:
    env = environ_with(**SANITIZER_ENV)
    server_exe, client_exe = build / "tfo-echo-server", build / "tfo-echo-client"

    def client(*flags: str, code: int = 0) -> None:
        _check(run([str(client_exe), *flags], env=env), code)

    with echo_server(
        "--mode", "line", "--tfo", "16", "--quickack", "--nodelay",
        executable=server_exe, env=env,
    ) as (server, port):  # fmt: skip
        target = f"127.0.0.1:{port}"
        client("--connect", target, "--tfo", "--connections", "3", "--iterations", "2")
        client("--connect", target, "--tfo-connect", "--connections", "2", "--json")
        client("--connect", target, "--payload", "1048576", "--iterations", "2")
        client("--connect", target, "--pattern", "wwr", "--iterations", "3", "--json")
        client("--connect", target, "--pattern", "wwr", "--cork", "--msg-more", "--nodelay")
        client("--connect", target, "--pattern", "wwr", "--single-write", "--iterations", "2")
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            try:
                for _ in range(20):  # 1.25 MiB, no newline: the server drops us
                    raw.sendall(b"z" * 65536)
            except (BrokenPipeError, ConnectionResetError):
                pass
        code, err = stop(server)
        assert code == 0 and no_sanitizer_report(err), err
    with echo_server(
        "--mode", "line", "--response-bytes", "1048576", executable=server_exe, env=env
    ) as (server, port):  # fmt: skip
        target = f"127.0.0.1:{port}"
        client("--connect", target, "--response-bytes", "1048576", "--iterations", "2")
        client("--connect", target, "--pattern", "wwr", "--response-bytes", "1048576")
        client("--connect", target, "--response-bytes", "1000", "--json", code=1)  # too short
        code, err = stop(server)
        assert code == 0 and no_sanitizer_report(err), err

    http_count, _, same, err = pipelined_body(server_exe, env)
    assert http_count == 2000 and same and no_sanitizer_report(err), err

    bench_exe = build / "tfo-bench-client"
    with echo_server(
        "--mode", "http", "--tfo", "256", executable=server_exe, env=env
    ) as (server, port):  # fmt: skip
        for flags in ((), ("--tfo",)):
            _check(
                run([str(bench_exe), "--connect", f"127.0.0.1:{port}", "--requests", "300",
                     "--concurrency", "16", "--progress", "50", *flags], env=env),
                0,
            )  # fmt: skip
        code, err = stop(server)
        assert code == 0 and no_sanitizer_report(err), err
    _check(run([str(bench_exe), "--connect", f"127.0.0.1:{port}"], env=env), 1)  # refused

    with echo_server("--mode", "http", executable=server_exe, env=env) as (server, port):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        body = b"hello from tfo-echo-server\n"
        for method in ("GET", "HEAD", "POST"):
            conn.request(method, "/", body=b"b" * 100 if method == "POST" else None)
            response = conn.getresponse()
            assert response.status == 200, method
            assert response.read() == (b"" if method == "HEAD" else body), method
        conn.close()
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            raw.sendall(b"GET / HTTP/2.0\r\nContent-Length: 99999999\r\n\r\n")
            assert raw.recv(4096).startswith(b"HTTP/1.1 505")
        code, err = stop(server)
        assert code == 0 and no_sanitizer_report(err), err


def _sanitized_bad_input(build: Path) -> None:
    env = environ_with(**SANITIZER_ENV)
    server_exe, client_exe = str(build / "tfo-echo-server"), str(build / "tfo-echo-client")
    with echo_server("--mode", "echo", executable=build / "tfo-echo-server", env=env) as (
        server,
        port,
    ):
        _check(run([server_exe, "--port", str(port)], env=env), 2)
        server.send_signal(signal.SIGINT)
        code, err = stop(server)
        assert code == 0 and no_sanitizer_report(err), err
    _check(run([client_exe, "--connect", f"127.0.0.1:{port}"], env=env), 1)  # refused
    for args in (["--frob"], ["--port"], ["--bind", "1.2.3"], ["--mode", "x" * 3000]):
        _check(run([server_exe, *args], env=env), 2)
    bench_exe = str(build / "tfo-bench-client")
    for args in (["--requests", "0"], ["--connect", "x" * 3000], ["--concurrency", "-1"]):
        _check(run([bench_exe, *args], env=env), 2)
    for args in (
        ["--connect", "127.0.0.1:1", "--payload", "1048577"],
        ["--connect", "[::1]x"],
        ["--connect", "127.0.0.1:1", "--iterations"],
        ["--connect", "y" * 3000],
    ):
        _check(run([client_exe, *args], env=env), 2)


def test_sanitized_server_and_client(sanitized_build: Path) -> None:
    run_in_netns(_sanitized_session, sanitized_build, timeout=60)


def test_sanitized_bad_input(sanitized_build: Path) -> None:
    run_in_netns(_sanitized_bad_input, sanitized_build, timeout=60)
