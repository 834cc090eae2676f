"""The kernel's ladder on the NFQUEUE backend: the packets tfo-delay released, as it
stamped them.

The queue's rule is at the receiving end (INPUT, nfrule.py), so a packet socket
on lo sees every packet before its delay; only the delayer knows when each one
reached the receiving TCP: when it gave the verdict. It records every packet it
releases (`--record-fd`, native/delay/record.c) into an anonymous memory file
this process created and handed over, as pcap records stamped on
CLOCK_MONOTONIC (the clock of the native client's timestamps); SIGUSR1 asks it
to write what it holds, and it answers "FLUSHED N L D" on stdout (N recorded
since it began, L released but not recorded for want of memory, D dropped
packets recorded, native/delay/drop.c).

Rules:
- Same interface as capture.Capture (open, start, stop -> CaptureResult,
  close), so a scenario does not know which one it has.
- stop() keeps what the delayer released from start() on, by its stamp, and
  then empties the file back to its header: the delayer writes only when
  asked, so nothing is written meanwhile, and a run's memory does not grow
  with its scenarios. A record the delayer could not keep is counted as a
  drop (CaptureResult.drops), never silently missing.
- Frames are given an Ethernet header with zero MACs, as lo's frames have,
  so decoding and the pcap a student gets are the same as with netem.
- Where the delayer also keeps each release's lateness (`--late-record-fd`, one
  int64 of nanoseconds per record, in record order), each segment carries it
  (CapturedSegment.late_ns): the backend's own error, measured per packet. A
  lateness file that does not hold one figure per record is a failed capture.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import struct
import time

from tfolab.runner.capture import CaptureResult, realtime_offset_ns
from tfolab.runner.capture_decode import (
    ETH_HEADER,
    ETHERTYPE_IPV4,
    ETHERTYPE_IPV6,
    CapturedSegment,
    decoded_or_why,
)
from tfolab.runner.capture_ring import CaptureFailed
from tfolab.runner.delayer_lines import read_line

PCAP_HEADER = struct.Struct("=IHHiIII")
PCAP_MAGIC_NS = 0xA1B23C4D
LINKTYPE_RAW = 101
RECORD = struct.Struct("=IIII")  # seconds, nanoseconds, captured length, wire length
LATENESS = struct.Struct("=q")  # a release's lateness, ns (native/delay/record.c)
FLUSH_TIMEOUT_S = 5.0


class DelayerCapture:
    """Record every TCP segment tfo-delay releases from start() to stop()."""

    def __init__(
        self,
        delayer_pid: int,
        delayer_stdout: int,
        record_fd: int,
        drop_fd: int | None = None,
        late_fd: int | None = None,
    ) -> None:
        self._pid = delayer_pid
        self._stdout = delayer_stdout  # the delayer's stdout, where it answers FLUSHED
        self._fd = record_fd  # the memory file it records into (ours, shared)
        self._drop_fd = drop_fd  # the one it records the packets it dropped into
        self._late_fd = late_fd  # the one it records each release's lateness into
        self._start_ns = 0
        self._offset_ns = 0
        self._running = False
        self._lost = 0  # records the delayer could not keep, as of the last stop()

    @property
    def running(self) -> bool:
        return self._running

    def open(self) -> None:
        """Check the file's pcap header: the delayer is recording."""
        header = os.pread(self._fd, PCAP_HEADER.size, 0)
        if len(header) < PCAP_HEADER.size:
            raise CaptureFailed("the delayer wrote no pcap header to its record")
        magic, _major, _minor, _zone, _sigfigs, _snaplen, linktype = PCAP_HEADER.unpack(header)
        if magic != PCAP_MAGIC_NS or linktype != LINKTYPE_RAW:
            raise CaptureFailed(
                f"the delayer's record is not a raw IP pcap ({magic:#x}, link type {linktype})"
            )

    def start(self) -> None:
        if self._running:
            raise RuntimeError("this capture is already running")
        self.open()
        self._offset_ns = realtime_offset_ns()
        self._start_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        self._running = True

    def stop(self) -> CaptureResult:
        """Ask the delayer for its records and return what it released since start()."""
        if not self._running:
            raise RuntimeError("this capture is not running")
        self._running = False
        lost = self._flush()
        step = realtime_offset_ns() - self._offset_ns
        segments, skipped, frames = self._take(self._fd, self._late_fd)
        if self._drop_fd is not None:  # dropped: stamped when their delay ended (hold.c)
            dropped, skipped_too, _ = self._take(self._drop_fd, None)
            segments += [dataclasses.replace(seg, lost=True) for seg in dropped]
            skipped += skipped_too
            segments.sort(key=lambda seg: seg.t_ns)
        drops, self._lost = lost - self._lost, lost
        return CaptureResult(
            segments=tuple(segments),
            frames=frames,
            kernel_packets=frames + drops,
            drops=drops,
            skipped=tuple(skipped),
            clock_offset_ns=self._offset_ns,
            clock_step_ns=step,
        )

    def close(self) -> None:
        self._running = False

    def _take(self, fd: int, late_fd: int | None) -> tuple[list[CapturedSegment], list[str], int]:
        """The segments one record file holds since start(), with their lateness where
        `late_fd` keeps it; both files are emptied (their offsets are shared with the
        delayer)."""
        end = os.fstat(fd).st_size
        data = os.pread(fd, end - PCAP_HEADER.size, PCAP_HEADER.size)
        late = _lateness(late_fd)
        segments, skipped, frames, consumed = self._decode(data, late)
        if consumed != len(data):
            raise CaptureFailed(f"the delayer's record ends in a cut record ({len(data)} bytes)")
        if late is not None and len(late) != frames:
            raise CaptureFailed(
                f"the delayer kept {len(late)} lateness figures for {frames} records"
            )
        os.ftruncate(fd, PCAP_HEADER.size)
        os.lseek(fd, PCAP_HEADER.size, os.SEEK_SET)
        if late_fd is not None:
            os.ftruncate(late_fd, 0)
            os.lseek(late_fd, 0, os.SEEK_SET)
        return segments, skipped, frames

    def _flush(self) -> int:
        """SIGUSR1, then wait for "FLUSHED N L D"; L, the records lost since the delayer began."""
        try:
            os.kill(self._pid, signal.SIGUSR1)
        except ProcessLookupError:
            raise CaptureFailed("the delayer has exited: its packets cannot be read") from None
        try:
            line = read_line(self._stdout, FLUSH_TIMEOUT_S)
        except TimeoutError:
            raise CaptureFailed("the delayer did not answer a request for its packets") from None
        except EOFError:
            raise CaptureFailed("the delayer exited before writing its packets") from None
        words = line.split()
        if len(words) != 4 or words[0] != b"FLUSHED" or not all(w.isdigit() for w in words[1:]):
            raise CaptureFailed(f"the delayer answered {line!r}, not FLUSHED N L D")
        return int(words[2])

    def _decode(
        self, data: bytes, late: tuple[int, ...] | None
    ) -> tuple[list[CapturedSegment], list[str], int, int]:
        """Segments released at or after start(), reasons for what was skipped, the
        records read and the bytes consumed (whole records only); `late`: each record's
        lateness (ns), in record order."""
        segments: list[CapturedSegment] = []
        skipped: list[str] = []
        at = frames = 0
        while at + RECORD.size <= len(data):
            seconds, nanoseconds, cap_len, wire_len = RECORD.unpack_from(data, at)
            if at + RECORD.size + cap_len > len(data):
                break
            packet = data[at + RECORD.size : at + RECORD.size + cap_len]
            at += RECORD.size + cap_len
            late_ns = late[frames] if late is not None and frames < len(late) else 0
            frames += 1
            t_ns = seconds * 1_000_000_000 + nanoseconds
            if t_ns < self._start_ns:
                continue
            ethertype = ETHERTYPE_IPV6 if packet[:1] and packet[0] >> 4 == 6 else ETHERTYPE_IPV4
            frame = bytes(12) + struct.pack("!H", ethertype) + packet  # lo's zero MACs
            seg = decoded_or_why(frame, t_ns, t_ns + self._offset_ns, ETH_HEADER + wire_len)
            if isinstance(seg, str):
                skipped.append(seg)
            else:
                segments.append(dataclasses.replace(seg, late_ns=late_ns) if late_ns else seg)
        return segments, skipped, frames, at


def _lateness(fd: int | None) -> tuple[int, ...] | None:
    """The lateness figures the delayer wrote to `fd` (None: it keeps none)."""
    if fd is None:
        return None
    data = os.pread(fd, os.fstat(fd).st_size, 0)
    if len(data) % LATENESS.size:
        raise CaptureFailed(f"the delayer's lateness record ends cut ({len(data)} bytes)")
    return tuple(value for (value,) in LATENESS.iter_unpack(data))
