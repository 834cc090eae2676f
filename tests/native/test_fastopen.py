"""TCP Fast Open through the ctypes client against the native server, in a namespace.

Connection 1 asks for a cookie (no SYN data acknowledged), connection 2 sends its
request in the SYN and the server acknowledges it; the namespace's TcpExt
counters move accordingly.
"""

from __future__ import annotations

import threading
from typing import Any

from tests.native.netns import run_in_netns
from tests.native.support import echo_server, tcpext
from tfolab.core import native


def _fastopen_body(fastopen: str, server_qlen: str) -> dict[str, Any]:
    with echo_server("--tfo", server_qlen, "--mode", "line") as (_, port):
        before = tcpext()
        samples = native.run_client(
            native.ClientOptions(port=port, fastopen=fastopen, connections=3, payload_bytes=100)
        )
        after = tcpext()
    names = ("TCPFastOpenActive", "TCPFastOpenCookieReqd", "TCPFastOpenPassive")
    return {
        "errors": [s.error for s in samples],
        "acked": [s.syn_data_acked for s in samples],
        "connections": [s.connection for s in samples],
        "deltas": {name: after.get(name, 0) - before.get(name, 0) for name in names},
    }


def test_sendto_cookie_request_then_syn_data_acked() -> None:
    result = run_in_netns(_fastopen_body, "sendto", "16")
    assert result["errors"] == [None, None, None]
    assert result["connections"] == [1, 2, 3]
    assert result["acked"] == [False, True, True]
    assert result["deltas"]["TCPFastOpenCookieReqd"] == 1  # the first connection asks once
    assert result["deltas"]["TCPFastOpenActive"] == 2
    assert result["deltas"]["TCPFastOpenPassive"] == 2


def test_fastopen_connect_option_behaves_like_sendto() -> None:
    result = run_in_netns(_fastopen_body, "connect", "16")
    assert result["errors"] == [None, None, None]
    assert result["acked"] == [False, True, True]
    assert result["deltas"]["TCPFastOpenActive"] == 2


def test_server_without_fastopen_never_acks_syn_data() -> None:
    result = run_in_netns(_fastopen_body, "sendto", "0")
    assert result["errors"] == [None, None, None]
    assert result["acked"] == [False, False, False]
    assert result["deltas"]["TCPFastOpenActive"] == 0


def _sample_fields_body() -> list[native.Sample]:
    with echo_server("--mode", "line") as (_, port):
        return native.run_client(native.ClientOptions(port=port, iterations=3, connections=2))


def test_samples_carry_ordered_timestamps() -> None:
    samples = run_in_netns(_sample_fields_body)
    assert [(s.connection, s.iteration) for s in samples] == [
        (1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (2, 3),
    ]  # fmt: skip
    for s in samples:
        assert s.error is None
        assert len(s.write_ns) == 1
        assert s.write_ns[0] <= s.first_byte_ns <= s.last_byte_ns
        assert 0 < s.round_ms < 1000
        if s.iteration == 1:
            assert 0 < s.connect_start_ns <= s.connect_return_ns <= s.write_ns[0]
            assert s.connect_ms > 0
        else:
            assert s.connect_start_ns == 0 and s.connect_ms == 0.0
        assert (s.close_ns > 0) == (s.iteration == 3)
        assert s.first_byte_ms > 0


def _refused_body() -> list[native.Sample]:
    with echo_server() as (server, port):
        pass  # stopped: nothing listens on port any more
    assert server.returncode == 0
    return native.run_client(native.ClientOptions(port=port, connections=2, iterations=2))


def test_connection_refused_is_recorded_not_raised() -> None:
    samples = run_in_netns(_refused_body)
    assert [(s.connection, s.iteration, s.error) for s in samples] == [
        (1, 1, "connect: ECONNREFUSED"),
        (2, 1, "connect: ECONNREFUSED"),
    ]
    assert all(s.close_ns > 0 and s.first_byte_ns == 0 for s in samples)


def _long_line_body() -> list[native.Sample]:
    with echo_server("--mode", "line") as (_, port):
        return native.run_client(
            native.ClientOptions(port=port, payload_bytes=native.MAX_PAYLOAD, iterations=2)
        )


def test_a_one_mebibyte_line_is_echoed_whole() -> None:
    samples = run_in_netns(_long_line_body)
    assert [s.error for s in samples] == [None, None]


def _gil_body() -> list[native.Sample]:
    """Run the library's server in a thread through ctypes and the client beside it.

    tfl_server_run blocks until its stop pipe is written: the client can only run
    if ctypes released the GIL around that call.
    """
    lib = native.load_library()
    import ctypes
    import os

    cfg = native.CServerConfig()
    lib.tfl_server_config_init(ctypes.byref(cfg))
    cfg.mode = 1  # line
    port = ctypes.c_int(0)
    err = ctypes.create_string_buffer(256)
    listen_fd = lib.tfl_server_listen(ctypes.byref(cfg), ctypes.byref(port), err, len(err))
    assert listen_fd >= 0, err.value
    stop_read, stop_write = os.pipe()
    outcome: list[int] = []
    server = threading.Thread(
        target=lambda: outcome.append(
            lib.tfl_server_run(listen_fd, ctypes.byref(cfg), stop_read, err, len(err))
        )
    )
    server.start()
    try:
        samples = native.run_client(native.ClientOptions(port=port.value, iterations=2))
    finally:
        os.write(stop_write, b"x")
        server.join(10)
    assert not server.is_alive() and outcome == [0], err.value
    for fd in (listen_fd, stop_read, stop_write):
        os.close(fd)
    return samples


def test_ctypes_calls_release_the_gil() -> None:
    samples = run_in_netns(_gil_body)
    assert [s.error for s in samples] == [None, None]
