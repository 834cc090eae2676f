"""Edge cases on real sockets: pipelining, many lines per read, timeouts, early close.

The client never hangs (a silent server is an ETIMEDOUT after timeout_ms) and never
raises for network trouble; the server answers pipelined input in order.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

from tests.native.netns import run_in_netns
from tests.native.support import echo_server, stop
from tfolab.core import native


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    deadline = time.monotonic() + 10
    while len(data) < size and time.monotonic() < deadline:
        chunk = sock.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def pipelined_body(
    executable: Path | None = None, env: dict[str, str] | None = None
) -> tuple[int, int, bool, str]:
    """2000 pipelined HTTP requests in one send; 20000 lines in one send (also run sanitized)."""
    request = b"GET / HTTP/1.1\r\nHost: lab\r\n\r\n"
    lines = b"".join(b"%d\n" % i for i in range(20000))
    with echo_server("--mode", "http", executable=executable, env=env) as (server, port):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(request * 2000)
            answer = sock.recv(4096)
            one = len(answer.split(b"HTTP/1.1 200 OK")[1]) + len(b"HTTP/1.1 200 OK")
            rest = _recv_exactly(sock, one * 2000 - len(answer))
            http_count = (answer + rest).count(b"HTTP/1.1 200 OK\r\n")
        _, http_err = stop(server)
    with (
        echo_server("--mode", "line", executable=executable, env=env) as (server, port),
        socket.create_connection(("127.0.0.1", port), timeout=5) as sock,
    ):
        sock.sendall(lines + b"partial")
        echoed = _recv_exactly(sock, len(lines))
        _, line_err = stop(server)
    return http_count, len(echoed), echoed == lines, http_err + line_err


def test_pipelined_requests_and_many_lines_per_read() -> None:
    http_count, echoed_len, same, err = run_in_netns(pipelined_body)
    assert http_count == 2000
    assert same, echoed_len
    assert err == ""


def _silent_server_body() -> tuple[list[str | None], float]:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)  # the kernel completes handshakes; nobody reads or answers
        port = listener.getsockname()[1]
        start = time.monotonic()
        samples = native.run_client(native.ClientOptions(port=port, timeout_ms=200, connections=2))
        elapsed = time.monotonic() - start
    return [s.error for s in samples], elapsed


def test_silent_server_times_out_instead_of_hanging() -> None:
    errors, elapsed = run_in_netns(_silent_server_body)
    assert errors == ["recv: ETIMEDOUT", "recv: ETIMEDOUT"]
    assert 0.35 < elapsed < 2.0


def _early_close_body() -> list[str | None]:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]

        def accept_and_hang_up() -> None:
            for _ in range(2):
                conn, _ = listener.accept()
                conn.recv(1)
                conn.close()

        closer = threading.Thread(target=accept_and_hang_up)
        closer.start()
        samples = native.run_client(
            native.ClientOptions(port=port, payload_bytes=1, connections=2, timeout_ms=2000)
        )
        closer.join(10)
    return [s.error for s in samples]


def test_server_closing_early_is_recv_eof() -> None:
    assert run_in_netns(_early_close_body) == ["recv: EOF", "recv: EOF"]


def _wrong_server_body() -> list[str | None]:
    with echo_server("--mode", "http") as (_, port):
        samples = native.run_client(
            native.ClientOptions(port=port, payload_bytes=200, timeout_ms=300)
        )
    return [s.error for s in samples]


def test_rr_against_the_http_server_times_out() -> None:
    # 200 bytes of filler ending in '\n' is no HTTP request head: nothing comes back
    assert run_in_netns(_wrong_server_body) == ["recv: ETIMEDOUT"]


def _garbling_server_body() -> list[str | None]:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]

        def answer_garbage() -> None:
            conn, _ = listener.accept()
            with conn:
                conn.sendall(b"X" * len(_recv_exactly(conn, 16)))
                conn.recv(1)  # wait for the client to close

        server = threading.Thread(target=answer_garbage)
        server.start()
        samples = native.run_client(native.ClientOptions(port=port, timeout_ms=2000))
        server.join(10)
    return [s.error for s in samples]


def test_a_reply_that_is_not_the_echo_is_a_verify_error() -> None:
    assert run_in_netns(_garbling_server_body) == ["verify: EBADMSG"]


def _many_at_once_body() -> int:
    with echo_server("--mode", "line", "--max-conns", "300") as (server, port):
        socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(300)]
        for i, sock in enumerate(socks):
            sock.sendall(b"connection %d\n" % i)
        good = sum(_recv_exactly(s, len(b"connection %d\n" % i)) == b"connection %d\n" % i
                   for i, s in enumerate(socks))  # fmt: skip
        for sock in socks:
            sock.close()
        server.wait(timeout=10)  # --max-conns 300: exits once all have closed
        assert server.returncode == 0
    return good


def test_many_connections_at_once() -> None:
    assert run_in_netns(_many_at_once_body) == 300
