"""The one ctypes binding to libtfolab (native/include/tfolab.h) and its executables.

Rules of this module:
- Built files are found with ``importlib.resources.files("tfolab._native")`` (the
  package CMake installs beside them), never relative to this file.
- The library is loaded lazily and once. Every C function gets its argtypes and
  restype; the ABI version and the ``sizeof`` of every shared struct are checked
  against what the library exports. Anything missing or stale raises
  ``NativeError`` with one line that says what and how to fix it.
- The ctypes structs below mirror tfolab.h field for field: change both together
  and bump ``TFL_ABI_VERSION``.
- ``run_client`` is one blocking C call; ctypes.CDLL releases the GIL around it.
  Every blocking call inside is bounded by ``timeout_ms``.
- Bad options raise ``ValueError`` with the library's own one-line message;
  network failures never raise: they are recorded in each ``Sample.error``.
"""

from __future__ import annotations

import ctypes
import importlib.resources
import threading
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ABI_VERSION",
    "EXECUTABLES",
    "MAX_PAYLOAD",
    "MAX_SAMPLES",
    "ClientOptions",
    "NativeError",
    "Sample",
    "executable_path",
    "library_path",
    "load_library",
    "run_client",
]

ABI_VERSION = 6
HOST_MAX = 64
CC_MAX = 16  # TFL_CC_MAX: a congestion control name, incl. NUL
MAX_PAYLOAD = 1024 * 1024
MAX_SAMPLES = 100_000
MAX_WRITES = 2
LIBRARY_NAME = "libtfolab.so"
EXECUTABLES = ("tfo-echo-server", "tfo-echo-client", "tfo-bench-client", "tfo-delay")
_ERR_LEN = 256
_FIX = "reinstall with `pip install -e .`"

# The C enums of tfolab.h for the scenario settings client_fastopen and pattern
# (declared in tfolab/model/scenario.py); a test pins that both name the same choices.
_FASTOPEN = {"off": 0, "sendto": 1, "connect": 2}
_PATTERN = {"rr": 0, "wwr": 1}


class NativeError(RuntimeError):
    """The native parts are missing, stale or unusable; the message says how to fix it."""


class CClientConfig(ctypes.Structure):
    """struct tfl_client_config."""

    _fields_ = [
        ("host", ctypes.c_char * HOST_MAX),
        ("port", ctypes.c_int32),
        ("fastopen", ctypes.c_int32),
        ("pattern", ctypes.c_int32),
        ("nodelay", ctypes.c_int32),
        ("cork", ctypes.c_int32),
        ("msg_more", ctypes.c_int32),
        ("single_write", ctypes.c_int32),
        ("payload_bytes", ctypes.c_int32),
        ("first_write_bytes", ctypes.c_int32),
        ("second_write_bytes", ctypes.c_int32),
        ("iterations", ctypes.c_int32),
        ("connections", ctypes.c_int32),
        ("timeout_ms", ctypes.c_int32),
        ("response_bytes", ctypes.c_int32),
        ("read_whole", ctypes.c_int32),
        ("congestion", ctypes.c_char * CC_MAX),
    ]


class CSample(ctypes.Structure):
    """struct tfl_sample."""

    _fields_ = [
        ("connect_start_ns", ctypes.c_int64),
        ("connect_return_ns", ctypes.c_int64),
        ("write_ns", ctypes.c_int64 * MAX_WRITES),
        ("first_byte_ns", ctypes.c_int64),
        ("last_byte_ns", ctypes.c_int64),
        ("close_ns", ctypes.c_int64),
        ("connection", ctypes.c_int32),
        ("iteration", ctypes.c_int32),
        ("n_writes", ctypes.c_int32),
        ("syn_data_acked", ctypes.c_int32),
        ("error_errno", ctypes.c_int32),
        ("errno_name", ctypes.c_char * 24),
        ("failed_call", ctypes.c_char * 16),
        ("local_port", ctypes.c_int32),
    ]


class CServerConfig(ctypes.Structure):
    """struct tfl_server_config."""

    _fields_ = [
        ("bind_addr", ctypes.c_char * HOST_MAX),
        ("port", ctypes.c_int32),
        ("tfo_qlen", ctypes.c_int32),
        ("mode", ctypes.c_int32),
        ("quickack", ctypes.c_int32),
        ("nodelay", ctypes.c_int32),
        ("max_conns", ctypes.c_int32),
        ("response_bytes", ctypes.c_int32),
        ("congestion", ctypes.c_char * CC_MAX),
        ("stamp_fd", ctypes.c_int32),
    ]


class CServerStats(ctypes.Structure):
    """struct tfl_server_stats."""

    _fields_ = [
        ("accepted", ctypes.c_int64),
        ("requests", ctypes.c_int64),
        ("bytes_received", ctypes.c_int64),
        ("closed", ctypes.c_int64),
    ]


_P = ctypes.POINTER
# name -> (restype, argtypes), exactly as in tfolab.h
_SIGNATURES: dict[str, tuple[object, list[object]]] = {
    "tfl_abi_version": (ctypes.c_int, []),
    "tfl_sizeof_client_config": (ctypes.c_size_t, []),
    "tfl_sizeof_sample": (ctypes.c_size_t, []),
    "tfl_sizeof_server_config": (ctypes.c_size_t, []),
    "tfl_sizeof_server_stats": (ctypes.c_size_t, []),
    "tfl_now_ns": (ctypes.c_int64, []),
    "tfl_fill_line": (None, [ctypes.c_char_p, ctypes.c_size_t]),
    "tfl_errno_name": (ctypes.c_char_p, [ctypes.c_int]),
    "tfl_client_config_init": (None, [_P(CClientConfig)]),
    "tfl_client_validate": (ctypes.c_int, [_P(CClientConfig), ctypes.c_char_p, ctypes.c_size_t]),
    "tfl_run_client": (
        ctypes.c_int,
        [
            _P(CClientConfig),
            _P(CSample),
            ctypes.c_size_t,
            _P(ctypes.c_size_t),
            ctypes.c_char_p,
            ctypes.c_size_t,
        ],
    ),
    "tfl_server_config_init": (None, [_P(CServerConfig)]),
    "tfl_server_listen": (
        ctypes.c_int,
        [_P(CServerConfig), _P(ctypes.c_int), ctypes.c_char_p, ctypes.c_size_t],
    ),
    "tfl_server_run": (
        ctypes.c_int,
        [ctypes.c_int, _P(CServerConfig), ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t],
    ),
    "tfl_server_run_counted": (
        ctypes.c_int,
        [
            ctypes.c_int,
            _P(CServerConfig),
            ctypes.c_int,
            _P(CServerStats),
            ctypes.c_char_p,
            ctypes.c_size_t,
        ],
    ),
}
_SIZES = {
    "tfl_sizeof_client_config": CClientConfig,
    "tfl_sizeof_sample": CSample,
    "tfl_sizeof_server_config": CServerConfig,
    "tfl_sizeof_server_stats": CServerStats,
}

_lock = threading.Lock()
_library: ctypes.CDLL | None = None


@dataclass(frozen=True)
class ClientOptions:
    """What the client does; mirrors the flags of tfo-echo-client."""

    port: int
    host: str = "127.0.0.1"
    fastopen: str = "off"  # a key of _FASTOPEN: the scenario's client_fastopen
    pattern: str = "rr"  # a key of _PATTERN: the scenario's pattern
    nodelay: bool = False
    cork: bool = False
    msg_more: bool = False
    single_write: bool = False
    payload_bytes: int = 16
    first_write_bytes: int = 10
    second_write_bytes: int = 6
    response_bytes: int = 0  # 0: read the echo; N: a server with --response-bytes N
    read_whole: bool = False  # SO_RCVLOWAT = the whole answer: one read per answer
    iterations: int = 1
    connections: int = 1
    timeout_ms: int = 5000
    congestion: str = ""  # TCP_CONGESTION before connecting; "" = the namespace's default


@dataclass(frozen=True)
class Sample:
    """One iteration on one connection; timestamps are CLOCK_MONOTONIC ns, 0 = did not happen.

    Connect timestamps are set on a connection's first iteration only; ``close_ns`` on
    its last. ``write_ns`` holds the time each write call was issued (in sendto mode
    the first one is the sendto). ``error`` is "call: ERRNO_NAME", e.g.
    "connect: ECONNREFUSED", or "recv: EOF" when the server closed early.
    """

    connection: int
    iteration: int
    connect_start_ns: int
    connect_return_ns: int
    write_ns: tuple[int, ...]
    first_byte_ns: int
    last_byte_ns: int
    close_ns: int
    syn_data_acked: bool
    error: str | None
    local_port: int = 0  # the connection's own port once connected (0: never connected)

    @property
    def connect_ms(self) -> float:
        """connect()/sendto() call until it returned; 0.0 on iterations without a connect."""
        return _ms(self.connect_start_ns, self.connect_return_ns)

    @property
    def _start_ns(self) -> int:
        """Connect start, or on later iterations their first write."""
        return self.connect_start_ns or (self.write_ns[0] if self.write_ns else 0)

    @property
    def first_byte_ms(self) -> float:
        """Connect start (later iterations: their first write) to the first response byte."""
        return _ms(self._start_ns, self.first_byte_ns)

    @property
    def last_byte_ms(self) -> float:
        """Connect start (later iterations: their first write) to the last response byte."""
        return _ms(self._start_ns, self.last_byte_ns)

    @property
    def round_ms(self) -> float:
        """First write to last response byte (wwr: one write-write-read round)."""
        return _ms(self.write_ns[0] if self.write_ns else 0, self.last_byte_ns)


def _ms(start_ns: int, end_ns: int) -> float:
    """Milliseconds from start to end, 0.0 when either did not happen."""
    if start_ns == 0 or end_ns == 0:
        return 0.0
    return (end_ns - start_ns) / 1e6


def _native_dir() -> Path:
    try:
        folder = importlib.resources.files("tfolab._native")
    except ModuleNotFoundError as err:
        raise NativeError(f"the native parts are not built (no tfolab._native): {_FIX}") from err
    if not isinstance(folder, Path):
        raise NativeError(f"the native parts are not on the file system ({folder}): {_FIX}")
    return folder


def library_path() -> Path:
    """Path of libtfolab.so in the installed package."""
    path = _native_dir() / LIBRARY_NAME
    if not path.is_file():
        raise NativeError(f"the native library is missing ({path}): {_FIX}")
    return path


def executable_path(name: str) -> Path:
    """Path of a built executable: one of EXECUTABLES (tfo-echo-server, tfo-bench-client...)."""
    if name not in EXECUTABLES:
        raise ValueError(f"unknown native executable {name!r}: expected one of {EXECUTABLES}")
    path = _native_dir() / name
    if not path.is_file():
        raise NativeError(f"the native executable {name} is missing ({path}): {_FIX}")
    return path


def optional_executable(name: str) -> str | None:
    """The executable's path as a string, or None where it is not built."""
    try:
        return str(executable_path(name))
    except NativeError:
        return None


def load_library() -> ctypes.CDLL:
    """Load libtfolab once, declare every signature and check the ABI; NativeError if stale."""
    global _library
    with _lock:
        if _library is None:
            _library = _load(library_path())
        return _library


def _load(path: Path) -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as err:
        raise NativeError(f"the native library cannot be loaded ({err}): {_FIX}") from err
    for name, (restype, argtypes) in _SIGNATURES.items():
        try:
            function = getattr(lib, name)
        except AttributeError as err:
            raise NativeError(
                f"the native library is missing or stale (no {name}): {_FIX}"
            ) from err
        function.restype = restype
        function.argtypes = argtypes
    version = lib.tfl_abi_version()
    if version != ABI_VERSION:
        raise NativeError(
            f"the native library is missing or stale (ABI {version}, expected {ABI_VERSION}): "
            f"{_FIX}"
        )
    for function_name, struct in _SIZES.items():
        size = getattr(lib, function_name)()
        if size != ctypes.sizeof(struct):
            raise NativeError(
                f"the native library is missing or stale ({struct.__name__} is {size} bytes "
                f"in C, {ctypes.sizeof(struct)} in Python): {_FIX}"
            )
    return lib


def _config(lib: ctypes.CDLL, options: ClientOptions) -> CClientConfig:
    if options.fastopen not in _FASTOPEN:
        raise ValueError(f"fastopen must be one of {list(_FASTOPEN)}, got {options.fastopen!r}")
    if options.pattern not in _PATTERN:
        raise ValueError(f"pattern must be one of {list(_PATTERN)}, got {options.pattern!r}")
    host = options.host.encode("ascii", errors="replace")
    if len(host) >= HOST_MAX or b"\0" in host:
        raise ValueError(f"host {options.host!r} is not an address such as 127.0.0.1 or ::1")
    cfg = CClientConfig()
    lib.tfl_client_config_init(ctypes.byref(cfg))
    cfg.host = host
    numbers = {
        "port": options.port,
        "payload_bytes": options.payload_bytes,
        "first_write_bytes": options.first_write_bytes,
        "second_write_bytes": options.second_write_bytes,
        "response_bytes": options.response_bytes,
        "iterations": options.iterations,
        "connections": options.connections,
        "timeout_ms": options.timeout_ms,
    }
    for field, value in numbers.items():
        if not -(2**31) <= value < 2**31:
            raise ValueError(f"{field} {value} is out of range")
        setattr(cfg, field, value)
    cfg.fastopen = _FASTOPEN[options.fastopen]
    cfg.pattern = _PATTERN[options.pattern]
    cfg.nodelay = int(options.nodelay)
    cfg.cork = int(options.cork)
    cfg.msg_more = int(options.msg_more)
    cfg.single_write = int(options.single_write)
    cfg.read_whole = int(options.read_whole)
    name = options.congestion.encode()
    if len(name) >= CC_MAX:
        raise ValueError(f"congestion control {options.congestion!r} is too long")
    cfg.congestion = name
    err = ctypes.create_string_buffer(_ERR_LEN)
    if lib.tfl_client_validate(ctypes.byref(cfg), err, len(err)) != 0:
        raise ValueError(err.value.decode(errors="replace"))
    return cfg


def _sample(raw: CSample) -> Sample:
    error = None
    if raw.failed_call:
        error = f"{raw.failed_call.decode()}: {raw.errno_name.decode()}"
    writes = max(0, min(raw.n_writes, MAX_WRITES))
    return Sample(
        connection=raw.connection,
        iteration=raw.iteration,
        connect_start_ns=raw.connect_start_ns,
        connect_return_ns=raw.connect_return_ns,
        write_ns=tuple(raw.write_ns[:writes]),
        first_byte_ns=raw.first_byte_ns,
        last_byte_ns=raw.last_byte_ns,
        close_ns=raw.close_ns,
        syn_data_acked=bool(raw.syn_data_acked),
        error=error,
        local_port=raw.local_port,
    )


def run_client(options: ClientOptions) -> list[Sample]:
    """Run the native client (blocking, GIL released); one Sample per iteration that ran.

    A failing connection ends with the sample that carries its error; the next
    connection still runs. Raises ValueError for bad options, NativeError when the
    library is missing or stale.
    """
    lib = load_library()
    cfg = _config(lib, options)
    capacity = options.connections * options.iterations
    samples = (CSample * capacity)()
    count = ctypes.c_size_t(0)
    err = ctypes.create_string_buffer(_ERR_LEN)
    rc = lib.tfl_run_client(
        ctypes.byref(cfg), samples, capacity, ctypes.byref(count), err, len(err)
    )
    if rc != 0:
        raise ValueError(err.value.decode(errors="replace"))
    return [_sample(samples[i]) for i in range(count.value)]
