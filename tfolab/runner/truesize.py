"""What one received data segment costs the receiver's memory here: measured, not assumed.

The model turns receive memory into window (model/rcv_space.py), and a
segment charges its payload plus the skb's own overhead (truesize). That
overhead depends on how the kernel was built (MAX_TCP_HEADER follows the
configured link-layer headers: 832 bytes on this project's 6.18 host, 896 on
Debian's 6.1 once the small-head cache came, 1280 before) and on the path (a
segment that crossed lo whole, or one cut from a GSO packet in software). So
the runner measures it in the lab's namespace, for each MTU a job uses,
before the delay is installed, and the parent's model takes the figure.

Rules: call only inside the lab's namespace (lo up); one loopback connection
per MTU, one segment of `PROBE_BYTES` (or one MSS where that is smaller),
the receiver's sk_rmem_alloc read with SO_MEMINFO once the segment is queued.
"""

from __future__ import annotations

import select
import socket
import struct
import time

from tfolab.runner import netns

SO_MEMINFO = 55  # include/uapi/asm-generic/socket.h
SK_MEMINFO_RMEM_ALLOC = 0  # include/uapi/linux/sock_diag.h
PROBE_BYTES = 1000
IPV4_TCP_TS_HEADERS = 52  # 20 IPv4 + 20 TCP + 12 timestamps
LOOPBACK_MTU = 65536
TIMEOUT_S = 2.0


def skb_heads(mtus: set[int]) -> dict[int, int]:
    """Bytes of truesize beyond the payload for one received segment, per MTU.

    Leaves lo at the last MTU probed; the scenario's own setup sets it again.
    """
    heads = {}
    for mtu in sorted(mtus):
        netns.set_loopback(True, mtu)
        netns.set_segmentation_offload(mtu >= LOOPBACK_MTU)
        payload = max(1, min(PROBE_BYTES, min(mtu, 65535) - IPV4_TCP_TS_HEADERS))
        heads[mtu] = _queued_truesize(payload) - payload
    return heads


def _queued_truesize(payload: int) -> int:
    """sk_rmem_alloc of a receiver holding one unread segment of `payload` bytes."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        with socket.create_connection(listener.getsockname(), timeout=TIMEOUT_S) as client:
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            server, _ = listener.accept()
            with server:
                client.sendall(b"t" * payload)
                _wait_queued(server, payload)
                raw = server.getsockopt(socket.SOL_SOCKET, SO_MEMINFO, 4 * 9)
                return int(struct.unpack_from("I", raw, 4 * SK_MEMINFO_RMEM_ALLOC)[0])


def _wait_queued(server: socket.socket, payload: int) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        select.select([server], [], [], TIMEOUT_S)
        if len(server.recv(payload, socket.MSG_PEEK | socket.MSG_DONTWAIT)) >= payload:
            return
    raise TimeoutError(f"a {payload}-byte probe segment did not arrive on lo")
