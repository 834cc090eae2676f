"""The applications' own calls, as they stamped them, on the capture's connections.

Rules: the client's calls come from its samples (tfolab.core.native.Sample: each
write, the first and last byte read, the close), the echo server's from its call
stamps (`--stamp-fd`: one struct tfl_call_stamp per recv() that returned, send call
and close(), native/src/lib/server.c); both on CLOCK_MONOTONIC, the capture's clock.
A call belongs to the captured connection whose client port it names; a call on a
connection the capture did not number (the warm-up's) is left out, and so is one on
a port two captured connections share (which one it was cannot be told). A stamp
file that does not hold whole, known records is an internal error, never a guess.
"""

from __future__ import annotations

import os
import struct
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tfolab.core import native
from tfolab.model.captured import CallName, CapturedCall
from tfolab.model.events import Side

STAMP = struct.Struct("=qii")  # struct tfl_call_stamp: ns, peer_port, call
_CALLS: dict[int, CallName] = {1: "read", 2: "write", 3: "close"}


@dataclass(frozen=True)
class ServerStamp:
    ns: int
    port: int  # the client's
    call: CallName


class StampFileError(RuntimeError):
    """The server's stamp file holds something else than its records."""


def read_stamps(fd: int) -> list[ServerStamp]:
    """Every stamp the server wrote to `fd` (a memory file this process owns)."""
    size = os.fstat(fd).st_size
    data = os.pread(fd, size, 0)
    whole = len(data) - len(data) % STAMP.size
    stamps = []
    for ns, port, call in STAMP.iter_unpack(data[:whole]):
        if call not in _CALLS or not 0 < port < 65536:
            raise StampFileError(f"the echo server's stamp file holds a bad record {call}:{port}")
        stamps.append(ServerStamp(ns, port, _CALLS[call]))
    return stamps


def captured_calls(
    samples: Iterable[native.Sample],
    server: Iterable[ServerStamp],
    connection_of_port: Mapping[int, int],
    origin_ns: int,
) -> list[CapturedCall]:
    """The calls of both applications on the captured connections, in time order.

    `connection_of_port`: each captured connection's number by its client port (a
    port two connections used is absent)."""
    calls: list[CapturedCall] = []

    def add(ns: int, port: int, side: Side, call: CallName) -> None:
        connection = connection_of_port.get(port)
        if ns and connection is not None:
            calls.append(CapturedCall(round((ns - origin_ns) / 1e6, 4), connection, side, call))

    for sample in samples:
        for write_ns in sample.write_ns:
            add(write_ns, sample.local_port, "client", "write")
        add(sample.first_byte_ns, sample.local_port, "client", "read")
        if sample.last_byte_ns != sample.first_byte_ns:
            add(sample.last_byte_ns, sample.local_port, "client", "read")
        add(sample.close_ns, sample.local_port, "client", "close")
    for stamp in server:
        add(stamp.ns, stamp.port, "server", stamp.call)
    return sorted(calls, key=lambda c: c.t_ms)


def ports_to_connections(numbered: Iterable[tuple[int, int]]) -> dict[int, int]:
    """{client port: connection} from (port, connection) pairs, without a port two
    connections share."""
    pairs = set(numbered)
    shared = Counter(port for port, _ in pairs)
    return {port: connection for port, connection in pairs if shared[port] == 1}
