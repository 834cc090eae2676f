"""The kernel's own ladder: every TCP segment on the lab's lo, with the kernel's timestamps.

Call it only inside the lab's network namespace, with lo up:

    capture = Capture()          # nothing opened yet
    capture.start()              # from here on every TCP segment arriving on lo is kept
    ...                          # the measured part
    result = capture.stop()      # CaptureResult: segments, drops, ...
    rows = result.numbered(origin_ns)   # the JSON contract's `captured` rows
    capture.close()              # or use `with Capture() as capture:` (start/close)

start() and stop() may alternate any number of times on one Capture; each
stop() returns only what arrived since the matching start(). No tcpdump
process is involved.

Rules:
- How: an AF_PACKET socket on lo with a TPACKET_V3 receive ring mapped into
  this process (capture_ring.py). The kernel copies each packet into the ring
  and stamps it as it does so; nothing in this process runs per packet, and
  the ring's memory is not limited by net.core.rmem_max (which a user
  namespace cannot raise). One helper thread, started by open() and asleep in
  poll() until close(), wakes only when a whole block is full (1 MiB:
  thousands of small segments), copies it out and gives it back, so the ring
  never fills while the capture runs; during a small lab's measured part it
  never wakes. The rest is read by stop(). PACKET_STATISTICS counts what the
  ring had no room for (`CaptureResult.drops`, normally 0).
- Which copy: on lo a packet socket bound with ETH_P_ALL sees every packet
  twice, once leaving (PACKET_OUTGOING, from dev_queue_xmit_nit) and once
  arriving (PACKET_HOST, on the receive path just before the receiving TCP
  handles it). The kernel-side filter drops the outgoing copy and keeps the
  arriving one, as libpcap does on lo: a packet then counts only once it has
  really arrived, and the times are the ones tcpdump would show. With netem
  both copies are seen after the delay (netem holds packets in lo's qdisc),
  so `t_ns` is the arrival time, as the JSON contract's `captured[].t_ms`
  requires. The NFQUEUE delayer holds packets at the receiving end (INPUT),
  after both copies: there the capture is the delayer's own record
  (capture_delayer.py; tests/runner/test_capture.py checks that a SYN
  through NFQUEUE at D is stamped D after connect()).
- Time: the ring's stamps are CLOCK_REALTIME. They are moved onto
  CLOCK_MONOTONIC, the clock of the native client's timestamps, by the offset
  from the tightest of several back-to-back clock readings taken at start();
  stop() reads it again and reports the change (`clock_step_ns`: an NTP step
  or slew during the capture; normally well under a microsecond).
- Cost: opening the ring (on the first start(), or open()) and closing it
  each wait for an RCU grace period in the kernel (about 8 and 20 ms here);
  call open() early to move the first out of a scenario's setup. Between
  stop() and the next start() the socket stays bound with a filter that keeps
  nothing, which costs each packet on lo a clone and a filter run (well under
  a microsecond); close() when no further round is coming. While capturing,
  benchmarks/capture_cost.py measures the cost on a headline latency.
- Refusals (no CAP_NET_RAW, no AF_PACKET or no packet ring, as in some
  sandboxes): open()/start() raise CaptureUnavailable with the kernel's
  reason and errno; the run can go on without a capture. Any other failure
  to open (EINVAL from a wrong request) is CaptureFailed and fails the run.
"""

from __future__ import annotations

import mmap
import os
import select
import socket
import threading
import time
from dataclasses import dataclass

from tfolab.runner.capture_decode import (
    CapturedSegment,
    NumberedSegment,
    TcpOptions,
    decode_frame,
    decoded_or_why,
    number_connections,
    pcap_frames,
    write_pcap,
)
from tfolab.runner.capture_ring import (
    ARPHRD_LOOPBACK,
    PACKET_HOST,
    CaptureFailed,
    CaptureUnavailable,
    PacketRing,
    RingFrame,
)

__all__ = [
    "Capture",
    "CaptureFailed",
    "CaptureResult",
    "CaptureUnavailable",
    "CapturedSegment",
    "NumberedSegment",
    "TcpOptions",
    "decode_frame",
    "number_connections",
    "pcap_frames",
    "realtime_offset_ns",
    "write_pcap",
]

DEFAULT_BLOCK_BYTES = 1 << 20
DEFAULT_BLOCKS = 4
DEFAULT_SNAPLEN = 262_144  # tcpdump's default: whole frames (lo's largest is 65549 B)
FILTER_SWAP_SETTLE_S = 0.001  # a frame being copied as stop() swaps filters is done by then


@dataclass(frozen=True)
class CaptureResult:
    segments: tuple[CapturedSegment, ...]  # in arrival order, t_ns on CLOCK_MONOTONIC
    frames: int  # frames read from the ring
    kernel_packets: int  # frames the filter passed (PACKET_STATISTICS tp_packets, drops included)
    drops: int  # frames the ring had no room for (tp_drops): lost
    skipped: tuple[str, ...]  # one reason per frame that was not readable TCP
    clock_offset_ns: int  # CLOCK_REALTIME - CLOCK_MONOTONIC, used for every t_ns
    clock_step_ns: int  # how far that offset moved between start() and stop()
    notes: tuple[str, ...] = ()

    @property
    def lost(self) -> int:
        """Frames lost: dropped by the kernel, or counted by it and never read."""
        return self.drops + max(0, self.kernel_packets - self.drops - self.frames)

    def numbered(self, origin_ns: int) -> tuple[NumberedSegment, ...]:
        """The `captured` rows, t_ms counted from origin_ns (CLOCK_MONOTONIC)."""
        return number_connections(self.segments, origin_ns)


def realtime_offset_ns(pairs: int = 9) -> int:
    """CLOCK_REALTIME - CLOCK_MONOTONIC, from the tightest of `pairs` bracketed readings."""
    best_gap, best = -1, 0
    for _ in range(pairs):
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        real = time.clock_gettime_ns(time.CLOCK_REALTIME)
        after = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        if best_gap < 0 or after - before < best_gap:
            best_gap, best = after - before, real - (before + after) // 2
    return best


class Capture:
    """Record every TCP segment arriving on `interface` from start() to stop()."""

    def __init__(
        self,
        interface: str = "lo",
        *,
        block_bytes: int = DEFAULT_BLOCK_BYTES,
        blocks: int = DEFAULT_BLOCKS,
        snaplen: int = DEFAULT_SNAPLEN,
    ) -> None:
        if block_bytes % mmap.PAGESIZE or blocks < 2:
            raise ValueError("block_bytes must be a multiple of the page size, and blocks >= 2")
        self.interface = interface
        self.block_bytes, self.blocks, self.snaplen = block_bytes, blocks, snaplen
        self._ring: PacketRing | None = None
        self._lock = threading.Lock()  # the ring's blocks: the helper thread or stop()
        self._thread: threading.Thread | None = None
        self._thread_error: BaseException | None = None
        self._wake_r = self._wake_w = -1
        self._running = False
        self._offset_ns = 0

    def __enter__(self) -> Capture:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @property
    def running(self) -> bool:
        return self._running

    def open(self) -> None:
        """Open the socket, its ring and the helper thread, keeping nothing yet.

        start() does this if needed; it costs an RCU grace period (about 8 ms).
        Raises CaptureUnavailable where the kernel or sandbox refuses.
        """
        if self._ring is not None:
            return
        try:
            socket.if_nametoindex(self.interface)
        except OSError as err:
            raise CaptureUnavailable(f"no interface {self.interface!r} here: {err}") from None
        ring = PacketRing.open(self.interface, self.block_bytes, self.blocks, self.snaplen)
        self._ring = ring
        self._wake_r, self._wake_w = os.pipe()
        self._thread_error = None
        asleep = threading.Event()
        self._thread = threading.Thread(
            target=self._drain, args=(ring, self._wake_r, asleep), name="tfolab-capture"
        )
        self._thread.daemon = True
        self._thread.start()
        asleep.wait()

    def _drain(self, ring: PacketRing, wake: int, asleep: threading.Event) -> None:
        """The helper thread: asleep in poll() until a block is full or close() wakes it."""
        poller = select.poll()
        poller.register(ring.sock.fileno(), select.POLLIN)
        poller.register(wake, select.POLLIN)
        asleep.set()
        try:
            while wake not in dict(poller.poll()):
                with self._lock:
                    ring.take_full_blocks()
        except BaseException as err:  # handed to stop()
            self._thread_error = err

    def start(self) -> None:
        """Start keeping what arrives; raises CaptureUnavailable where it is refused."""
        if self._running:
            raise RuntimeError("this capture is already running")
        self.open()
        ring = self._ring
        assert ring is not None
        ring.statistics()  # reading resets the kernel's counters
        self._offset_ns = realtime_offset_ns()
        ring.keep_tcp()  # from here on, frames arrive in the ring
        self._running = True

    def stop(self) -> CaptureResult:
        """Stop keeping what arrives and return it, decoded; the ring stays open for a restart."""
        ring = self._ring
        if not self._running or ring is None:
            raise RuntimeError("this capture is not running")
        ring.keep_nothing()
        self._running = False
        time.sleep(FILTER_SWAP_SETTLE_S)
        if self._thread_error is not None:
            raise RuntimeError("the capture's reader thread failed") from self._thread_error
        packets, drops = ring.statistics()
        step = realtime_offset_ns() - self._offset_ns
        with self._lock:
            ring.take_full_blocks()
            ring.take_open_block()
            frames = ring.frames()
        segments, skipped = self._decode(frames)
        notes = []
        if frames and frames[0].hatype != ARPHRD_LOOPBACK:
            notes.append(f"link type {frames[0].hatype}, not loopback: read as Ethernet")
        return CaptureResult(
            segments=tuple(sorted(segments, key=lambda s: s.t_ns)),
            frames=len(frames),
            kernel_packets=packets,
            drops=drops,
            skipped=tuple(skipped),
            clock_offset_ns=self._offset_ns,
            clock_step_ns=step,
            notes=tuple(notes),
        )

    def _decode(self, frames: list[RingFrame]) -> tuple[list[CapturedSegment], list[str]]:
        segments, skipped = [], []
        for frame in frames:
            if frame.pkttype != PACKET_HOST:  # the filter keeps only arriving copies
                skipped.append(f"packet type {frame.pkttype}")
                continue
            t_ns = frame.t_realtime_ns - self._offset_ns
            seg = decoded_or_why(frame.data, t_ns, frame.t_realtime_ns, frame.wire_len)
            if isinstance(seg, str):
                skipped.append(seg)
            else:
                segments.append(seg)
        return segments, skipped

    def close(self) -> None:
        """Release the socket, its ring and the helper thread (what was not stopped is lost).

        Costs an RCU grace period in the kernel (about 20 ms).
        """
        if self._thread is not None:
            os.write(self._wake_w, b"x")
            self._thread.join()
            self._thread = None
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                os.close(fd)
        self._wake_r = self._wake_w = -1
        self._running = False
        if self._ring is not None:
            self._ring.close()
            self._ring = None
