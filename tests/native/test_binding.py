"""The ctypes binding itself: locating the built files, load-time checks, bad options.

These need no namespace: nothing here opens a connection.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.resources
import os
from pathlib import Path

import pytest

from tfolab.core import native


def test_files_come_from_the_installed_package() -> None:
    folder = importlib.resources.files("tfolab._native")
    assert native.library_path() == Path(str(folder)) / "libtfolab.so"
    for name in ("tfo-echo-server", "tfo-echo-client"):
        path = native.executable_path(name)
        assert path.parent == native.library_path().parent
        assert os.access(path, os.X_OK)


def test_unknown_executable_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown native executable"):
        native.executable_path("../../bin/sh")


def test_library_loads_with_matching_abi_and_struct_sizes() -> None:
    lib = native.load_library()
    assert lib is native.load_library()  # loaded once
    assert lib.tfl_abi_version() == native.ABI_VERSION
    assert lib.tfl_sizeof_client_config() == ctypes.sizeof(native.CClientConfig) == 140
    assert lib.tfl_sizeof_sample() == ctypes.sizeof(native.CSample) == 120
    assert lib.tfl_sizeof_server_config() == ctypes.sizeof(native.CServerConfig) == 112
    assert lib.tfl_sizeof_server_stats() == ctypes.sizeof(native.CServerStats) == 32
    assert lib.tfl_errno_name(111) == b"ECONNREFUSED"
    assert lib.tfl_errno_name(4242) == b"E4242"
    assert lib.tfl_now_ns() > 0
    line = ctypes.create_string_buffer(30)
    lib.tfl_fill_line(line, 28)
    assert line.raw[:28] == b"abcdefghijklmnopqrstuvwxyza\n"  # the request's and the answer's


def test_a_library_without_the_api_is_reported_stale() -> None:
    libc = ctypes.util.find_library("c")
    assert libc is not None
    with pytest.raises(native.NativeError, match=r"missing or stale .*pip install -e \."):
        native._load(Path(libc))


def test_a_file_that_is_no_library_is_reported() -> None:
    with pytest.raises(native.NativeError, match=r"cannot be loaded .*pip install -e \."):
        native._load(Path(__file__))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"port": 0}, "port must be 1..65535"),
        ({"host": "example.org"}, "bad address 'example.org'"),
        ({"host": "1" * 200}, "is not an address"),
        ({"payload_bytes": native.MAX_PAYLOAD + 1}, "payload must be 1..1048576"),
        ({"pattern": "wwr", "first_write_bytes": 0}, "at least 1 byte"),
        ({"pattern": "wwr", "single_write": True, "msg_more": True}, "do not combine"),
        ({"iterations": 0}, "iterations must be"),
        ({"connections": 1000, "iterations": 1000}, "at most 100000"),
        ({"timeout_ms": 0}, "timeout must be"),
        ({"fastopen": "yes"}, "fastopen must be one of"),
        ({"pattern": "rw"}, "pattern must be one of"),
        ({"iterations": 2**40}, "out of range"),
    ],
)
def test_bad_options_raise_value_error(changes: dict[str, object], message: str) -> None:
    options = native.ClientOptions(**{"port": 5000, **changes})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        native.run_client(options)


def test_sample_derived_milliseconds() -> None:
    sample = native.Sample(
        connection=1,
        iteration=1,
        connect_start_ns=1_000_000,
        connect_return_ns=3_000_000,
        write_ns=(3_500_000, 4_000_000),
        first_byte_ns=47_000_000,
        last_byte_ns=47_500_000,
        close_ns=48_000_000,
        syn_data_acked=False,
        error=None,
    )
    assert sample.connect_ms == 2.0
    assert sample.first_byte_ms == 46.0
    assert sample.round_ms == 44.0
    later = native.Sample(2, 2, 0, 0, (10_000_000,), 11_000_000, 12_000_000, 0, True, None)
    assert (later.connect_ms, later.first_byte_ms, later.round_ms) == (0.0, 1.0, 2.0)
    failed = native.Sample(1, 1, 5, 9, (), 0, 0, 10, False, "connect: ECONNREFUSED")
    assert (failed.first_byte_ms, failed.round_ms) == (0.0, 0.0)
