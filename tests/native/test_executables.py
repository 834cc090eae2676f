"""The executables used from a shell, as a student would, inside a namespace.

tfo-echo-server prints READY <port>; tfo-echo-client prints a table or JSON;
the http mode answers plain HTTP/1.x; the server stops cleanly on SIGTERM, after
--max-conns, or when its parent dies (--die-with-parent).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

import pytest

from tests.environment import require_or_skip
from tests.native.netns import run_in_netns
from tests.native.support import TIMEOUT_S, echo_server, run, stop
from tests.processes import running
from tfolab.core import native


def client(*flags: str) -> subprocess.CompletedProcess[str]:
    return run([str(native.executable_path("tfo-echo-client")), *flags])


def _table_body() -> subprocess.CompletedProcess[str]:
    with echo_server("--mode", "line", "--tfo", "16") as (_, port):
        return client("--connect", f"localhost:{port}", "--tfo", "--connections", "2")


def test_client_table_is_readable() -> None:
    done = run_in_netns(_table_body)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert "pattern rr" in lines[0] and "fastopen sendto" in lines[1]
    assert lines[3].split() == [
        "conn", "iter", "connect_ms", "first_byte_ms", "round_ms", "syn_data", "error",
    ]  # fmt: skip
    row1, row2 = lines[4].split(), lines[5].split()
    assert row1[:2] == ["1", "1"] and row1[5:] == ["-", "-"]  # cookie request: no SYN data
    assert row2[:2] == ["2", "1"] and row2[5:] == ["acked", "-"]
    assert any("round_ms" in line for line in lines[6:])  # the legend


def _rr_json_body() -> dict[str, Any]:
    with echo_server("--mode", "echo") as (_, port):
        done = client(
            "--connect", f"127.0.0.1:{port}", "--json", "--payload", "1000",
            "--iterations", "3", "--connections", "2",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_client_rr_json() -> None:
    result = run_in_netns(_rr_json_body)
    assert result["pattern"] == "rr" and result["payload_bytes"] == 1000
    samples = result["samples"]
    assert [(s["connection"], s["iteration"]) for s in samples] == [
        (1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (2, 3),
    ]  # fmt: skip
    for s in samples:
        assert s["error"] is None and s["syn_data_acked"] is False
        assert s["first_byte_ms"] > 0 and s["round_ms"] > 0
        assert (s["connect_ms"] is not None) == (s["iteration"] == 1)


def _refused_body() -> subprocess.CompletedProcess[str]:
    with echo_server() as (_, port):
        pass
    return client("--connect", f"127.0.0.1:{port}", "--json")


def test_client_connection_refused_exits_1_with_one_line() -> None:
    done = run_in_netns(_refused_body)
    assert done.returncode == 1
    assert len(done.stderr.splitlines()) == 1
    assert "connect failed: ECONNREFUSED" in done.stderr and "tfo-echo-server" in done.stderr
    sample = json.loads(done.stdout)["samples"][0]
    assert sample["error"] == {"call": "connect", "errno": "ECONNREFUSED"}


def _http_body() -> dict[str, Any]:
    with echo_server("--mode", "http") as (server, port):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/")
        first = conn.getresponse()
        first_body = first.read()
        conn.request("HEAD", "/x")  # same connection: keep-alive honoured
        head = conn.getresponse()
        head_body = head.read()
        conn.request("POST", "/", body=b"x" * 5000, headers={"Connection": "close"})
        last = conn.getresponse()
        last_body = last.read()
        conn.close()
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            raw.sendall(b"GET / HTTP/1.0\r\n\r\n")
            old = b""
            while chunk := raw.recv(4096):
                old += chunk
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            raw.sendall(b"NONSENSE\r\n\r\n")
            bad = raw.recv(4096)
        code, err = stop(server)
    return {
        "first": (first.status, first.getheader("Connection"), first_body),
        "head": (head.status, head.getheader("Content-Length"), head_body),
        "last": (last.status, last.getheader("Connection"), last_body),
        "old": old,
        "bad": bad,
        "exit": (code, err),
    }


def test_http_mode_answers_http_1_x() -> None:
    result = run_in_netns(_http_body)
    body = b"hello from tfo-echo-server\n"
    assert result["first"] == (200, "keep-alive", body)
    assert result["head"] == (200, str(len(body)), b"")
    assert result["last"] == (200, "close", body)
    assert result["old"].startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"Connection: close\r\n" in result["old"] and result["old"].endswith(body)
    assert result["bad"].startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert result["exit"] == (0, "")


def _overlong_line_body() -> tuple[bytes, int, str]:
    with echo_server("--mode", "line") as (server, port):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\0" * 8)
            chunk = b"y" * 65536
            received = b""
            try:
                for _ in range(40):  # 2.5 MiB without a newline
                    raw.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass
            with contextlib.suppress(ConnectionResetError):
                received = raw.recv(10)
        code, err = stop(server)
    return received, code, err


def test_line_longer_than_the_cap_drops_that_connection() -> None:
    received, code, err = run_in_netns(_overlong_line_body)
    assert received == b""
    assert code == 0
    assert err.count("\n") == 1 and "line longer than 1048576 bytes" in err


def _max_conns_body() -> tuple[int | None, list[str | None]]:
    with echo_server("--mode", "line", "--max-conns", "2") as (server, port):
        samples = native.run_client(native.ClientOptions(port=port, connections=2))
        try:
            code = server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
    return code, [s.error for s in samples]


def test_max_conns_exits_after_n_connections() -> None:
    assert run_in_netns(_max_conns_body) == (0, [None, None])


def test_sigterm_and_sigint_stop_cleanly() -> None:
    def body() -> list[tuple[int, str]]:
        results = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            with echo_server() as (server, _):
                server.send_signal(sig)
                results.append(stop(server))
        return results

    assert run_in_netns(body) == [(0, ""), (0, "")]


PARENT = """
import subprocess, sys
p = subprocess.Popen([sys.argv[1], "--port", "0", "--die-with-parent"], stdout=subprocess.PIPE)
print(p.stdout.readline().decode().strip(), p.pid, flush=True)
"""


def _die_with_parent_body() -> bool:
    exe = str(native.executable_path("tfo-echo-server"))
    done = run([sys.executable, "-c", PARENT, exe])
    ready, _port, pid = done.stdout.split()
    assert ready == "READY"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not running(int(pid)):
            return True
        time.sleep(0.01)
    os.kill(int(pid), signal.SIGKILL)
    return False


def test_die_with_parent() -> None:
    assert run_in_netns(_die_with_parent_body)


@pytest.mark.parametrize("name", ["tfo-echo-server", "tfo-echo-client"])
def test_help_documents_every_flag(name: str) -> None:
    done = run([str(native.executable_path(name)), "--help"])
    assert done.returncode == 0 and done.stderr == ""
    flags = {
        "tfo-echo-server": ["--bind", "--port", "--tfo", "--mode", "--quickack", "--nodelay",
                            "--max-conns", "--die-with-parent", "--help"],
        "tfo-echo-client": ["--connect", "--tfo", "--tfo-connect", "--pattern", "--nodelay",
                            "--cork", "--msg-more", "--single-write", "--payload",
                            "--first-write", "--second-write", "--iterations", "--connections",
                            "--timeout-ms", "--json", "--help"],
    }[name]  # fmt: skip
    for flag in flags:
        assert f"  {flag} " in done.stdout, flag
    assert "1048576" in done.stdout  # the documented size limit


def test_host_namespace_is_never_touched() -> None:
    before = open("/proc/sys/net/ipv4/tcp_fastopen").read()  # noqa: SIM115
    inside = run_in_netns(_read_tcp_fastopen, sysctls={"net.ipv4.tcp_fastopen": "1027"})
    assert inside == "1027\n" != before  # written in the namespace, where it took
    with open("/proc/sys/net/ipv4/tcp_fastopen") as sysctl:
        assert sysctl.read() == before


def _read_tcp_fastopen() -> str:
    with open("/proc/sys/net/ipv4/tcp_fastopen") as sysctl:
        return sysctl.read()


def _stats_body() -> list[str]:
    lines = []
    with echo_server("--mode", "line") as (server, port):
        assert server.stdout is not None
        server.send_signal(signal.SIGUSR1)
        lines.append(server.stdout.readline().strip())
        with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
            conn.sendall(b"one\ntwo\nthr")
            got = b""
            while got.count(b"\n") < 2:
                got += conn.recv(100)
            conn.sendall(b"ee\n")
            while got.count(b"\n") < 3:
                got += conn.recv(100)
        time.sleep(0.05)  # the server sees the close
        server.send_signal(signal.SIGUSR1)
        lines.append(server.stdout.readline().strip())
    return lines


def test_sigusr1_reports_what_the_application_received() -> None:
    """STATS counts complete lines as requests, however they were split into reads."""
    assert run_in_netns(_stats_body) == [
        "STATS accepted=0 requests=0 bytes=0 closed=0",
        "STATS accepted=1 requests=3 bytes=14 closed=1",
    ]


def _congestion_body() -> tuple[str, str]:
    """The server's accepted socket, seen by ss, and a TCP_CONGESTION the client set."""
    import shutil

    if shutil.which("ss") is None:
        return "", "ss (iproute2) is not installed"
    with echo_server("--mode", "line", "--congestion", "cubic") as (_, port):
        sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)
        with sock:
            sock.sendall(b"ping\n")
            sock.recv(16)
            shown = subprocess.run(
                ["ss", "-tinH", "state", "established", f"( sport = :{port} )"],
                capture_output=True, text=True, timeout=TIMEOUT_S, check=True,
            ).stdout  # fmt: skip
    return shown, ""


def test_the_servers_connections_run_the_congestion_control_it_was_given() -> None:
    shown, missing = run_in_netns(_congestion_body)
    if missing:
        require_or_skip("iproute2", missing)
    assert " cubic " in f" {shown} ", shown


def _response_bytes_body() -> tuple[list[dict[str, Any]], subprocess.CompletedProcess[str]]:
    with echo_server("--mode", "line", "--response-bytes", "5000") as (_, port):
        target = f"127.0.0.1:{port}"
        done = client("--connect", target, "--response-bytes", "5000", "--json",
                      "--payload", "20", "--iterations", "2", "--connections", "2")  # fmt: skip
        assert done.returncode == 0, done.stderr
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            raw.sendall(b"two\nlines\n")
            answer = b""
            while len(answer) < 10_000:
                chunk = raw.recv(65536)
                assert chunk, answer[-50:]
                answer += chunk
        echo_expected = client("--connect", target, "--payload", "20", "--json")
    line = bytes(ord("a") + k % 26 for k in range(4999)) + b"\n"
    assert answer == line + line  # each line answered with the same 5000 bytes
    return json.loads(done.stdout)["samples"], echo_expected


def test_the_server_answers_each_line_with_response_bytes() -> None:
    """--response-bytes N: every line gets N bytes ('a'..'z' repeated, then '\\n'), whatever
    its length; a client expecting the echo sees the wrong answer and says so."""
    samples, echo_expected = run_in_netns(_response_bytes_body)
    assert len(samples) == 4 and all(s["error"] is None for s in samples), samples
    assert all(s["round_ms"] > 0 and s["first_byte_ms"] > 0 for s in samples)
    assert echo_expected.returncode == 1
    assert "verify" in echo_expected.stdout + echo_expected.stderr


@pytest.mark.parametrize(
    ("name", "flags", "says"),
    [
        ("tfo-echo-server", ["--mode", "echo", "--response-bytes", "10"], "add --mode line"),
        ("tfo-echo-server", ["--response-bytes", "0"], "--response-bytes"),
        ("tfo-echo-client", ["--connect", "127.0.0.1:9", "--response-bytes", "1048577"],
         "--response-bytes"),
    ],
)  # fmt: skip
def test_response_bytes_out_of_range_is_refused(name: str, flags: list[str], says: str) -> None:
    done = run([str(native.executable_path(name)), *flags])
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
