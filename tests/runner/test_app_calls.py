"""The applications' own calls, stamped for real: the lab's echo server (--stamp-fd) and
the client's samples name the same connection by its port, each call in the order it
was made, on the clock of the client's own stamps."""

from __future__ import annotations

import os
import time

import pytest

from tests.native.netns import run_in_netns
from tfolab.core import native
from tfolab.model.scenario import ScenarioConfig
from tfolab.runner.app_calls import (
    STAMP,
    StampFileError,
    captured_calls,
    ports_to_connections,
    read_stamps,
)
from tfolab.runner.scenario_run import client_options
from tfolab.runner.server import start_server

CONFIG = ScenarioConfig(client_fastopen="off", response_bytes=3000)


def _exchange() -> tuple[list[native.Sample], list[tuple[int, int, str]]]:
    server = start_server(str(native.executable_path("tfo-echo-server")), CONFIG)
    try:
        samples = native.run_client(client_options(CONFIG, "127.0.0.1", server.port, 2))
        for _ in range(200):  # the server sees the client's FIN
            stamps = server.calls()
            if stamps and stamps[-1].call == "close":
                break
            time.sleep(0.01)
        return samples, [(s.ns, s.port, s.call) for s in server.calls()]
    finally:
        server.stop()


def test_the_server_stamps_each_call_on_the_clients_connection() -> None:
    samples, stamps = run_in_netns(_exchange)
    assert [s.error for s in samples] == [None, None]
    port = samples[0].local_port
    assert port > 0 and samples[1].local_port == port
    # two requests read and answered, then the end of file read and the close
    assert [call for _, _, call in stamps] == ["read", "write", "read", "write", "read", "close"]
    assert {p for _, p, _ in stamps} == {port}
    times = [ns for ns, _, _ in stamps]
    assert times == sorted(times)
    # each answer after its request was written, and before the client read it
    answered = zip(samples, stamps[0:4:2], stamps[1:4:2], strict=True)
    for sample, (read_ns, _, _), (write_ns, _, _) in answered:
        assert sample.write_ns[0] < read_ns <= write_ns < sample.last_byte_ns
    assert samples[-1].close_ns < times[-2]  # the end of file came after the client's close

    calls = captured_calls(samples, [], {port: 1}, samples[0].connect_start_ns)
    # the first and the last byte's read: one call, or two where the answer came in two
    kinds = [(c.side, c.call) for c in calls]
    assert [k for n, k in enumerate(kinds) if not n or k != kinds[n - 1]] == [
        ("client", "write"),
        ("client", "read"),
        ("client", "write"),
        ("client", "read"),
        ("client", "close"),
    ]
    assert calls[0].t_ms == pytest.approx(
        (samples[0].write_ns[0] - samples[0].connect_start_ns) / 1e6, abs=1e-3
    )


def test_a_port_two_captured_connections_share_names_neither() -> None:
    assert ports_to_connections([(40000, 1), (40001, 2), (40000, 3)]) == {40001: 2}


def test_a_stamp_file_with_a_record_it_does_not_know_is_an_error() -> None:
    fd = os.memfd_create("test-stamps", os.MFD_CLOEXEC)
    try:
        os.write(fd, STAMP.pack(1_000, 40000, 2) + STAMP.pack(2_000, 40000, 9))
        with pytest.raises(StampFileError, match="bad record 9:40000"):
            read_stamps(fd)
    finally:
        os.close(fd)
