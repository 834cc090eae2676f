"""The runner's two streams, typed on both sides: a Job in, Events out.

The parent writes one Job (JSON) to the runner's stdin; the runner writes its
Events to its stdout, each one frame: a 4-byte big-endian length, then that
many bytes of JSON (`frame` / `read_frame`). No line-length limit applies: a
capture of many megabytes crosses as one event. This module is the only place either shape is
defined, encoded or decoded (msgspec: a typed decode that refuses anything
else), so both sides agree by construction and consumers use attributes,
never string keys.

Rules: every Event carries its kind in the "event" field of its JSON; the
stream ends with Done or Failed.
"""

from __future__ import annotations

import asyncio
import struct

import msgspec

from tfolab.model.captured import CapturedCall, CapturedRow
from tfolab.model.scenario import ScenarioConfig

__all__ = ["CapturedRow"]  # the Captured event's rows: the model's wire vocabulary


class JobScenario(msgspec.Struct, frozen=True):
    """One scenario to run; `call_timeout_ms` bounds each call of the native client
    (connect, write, a whole answer's read), from the model's span of the scenario."""

    name: str
    iterations: int
    config: ScenarioConfig
    call_timeout_ms: int = 10_000


class Job(msgspec.Struct, frozen=True):
    lab: str
    delay_ms: float
    backend: str
    scenarios: tuple[JobScenario, ...]

    def to_json(self) -> str:
        return msgspec.json.encode(self).decode()

    @staticmethod
    def from_json(text: str | bytes) -> Job:
        return msgspec.json.decode(text, type=Job)


class BenchJob(msgspec.Struct, frozen=True):
    """One delay of `tfolab bench`: N fresh HTTP GETs per server and mode, C in flight."""

    delay_ms: float
    backend: str
    requests: int
    concurrency: int
    servers: tuple[str, ...]  # "tfolab" (the bundled server), "nginx"
    nginx: str = ""  # the nginx executable, where "nginx" is among the servers
    modes: tuple[str, ...] = ("plain", "tfo")
    rounds: int = 1  # every (server, mode) run this many times, the servers alternating

    def to_json(self) -> str:
        return msgspec.json.encode(self).decode()

    @staticmethod
    def from_json(text: str | bytes) -> BenchJob:
        return msgspec.json.decode(text, type=BenchJob)


class Setup(msgspec.Struct, frozen=True, tag="setup", tag_field="event"):
    """The lab network is up: namespace, delay backend, the first server ready.

    `capture` is "" when every segment on lo is captured, else why not.
    """

    backend: str
    delay_ms: float
    namespace: str
    kernel: str
    notes: list[str]
    setup_ms: float
    capture: str = ""
    realtime: bool = True  # lab processes at real-time priority (else normal scheduling)
    # per MTU: a received segment's truesize beyond its payload, measured (runner/truesize.py)
    skb_heads: dict[int, int] = {}


class SlotWait(msgspec.Struct, frozen=True, tag="slot_wait", tag_field="event"):
    """In line for a machine-wide measurement slot (tfolab.core.slots): `ahead` waiters first."""

    ahead: int
    slots: int


class SlotTaken(msgspec.Struct, frozen=True, tag="slot", tag_field="event"):
    """A measurement slot is held: measuring starts. `waited_ms` is the time spent in line."""

    waited_ms: float
    slots: int
    ahead: int = 0  # waiters ahead when this run joined the line


class ScenarioStarted(msgspec.Struct, frozen=True, tag="scenario", tag_field="event"):
    name: str


class Note(msgspec.Struct, frozen=True, tag="note", tag_field="event"):
    scenario: str
    text: str


class Iteration(msgspec.Struct, frozen=True, tag="iteration", tag_field="event"):
    """One measured iteration: the headline, connect()'s return where there is one, and when it
    started (the captured segments' clock)."""

    scenario: str
    i: int
    measured_ms: float
    connect_ms: float
    syn_data_acked: bool
    start_ms: float = 0.0  # the iteration's first call, from the scenario's first measured call
    # how long the lab's threads waited for a CPU meanwhile (runner/cpu_wait.py): for a
    # round of a kept connection, the whole connection's
    cpu_wait_ms: float = 0.0


class Captured(msgspec.Struct, frozen=True, tag="captured", tag_field="event"):
    """The segments of a scenario's measured part, and its raw frames for pcap."""

    scenario: str
    segments: list[CapturedRow]
    frames: list[tuple[int, bytes]]  # (CLOCK_REALTIME ns, Ethernet frame)
    lost: int = 0
    # the applications' own calls over the same connections (their wake-ups), where stamped
    calls: list[CapturedCall] = []


class Counters(msgspec.Struct, frozen=True, tag="counters", tag_field="event"):
    """The TcpExt deltas of a scenario's measured part, what the server application did in it
    (connections it accepted, request lines it received; None: not known), and how long the
    lab's threads waited for a CPU over the whole of it, and how long the hypervisor took
    this machine's CPUs meanwhile (steal; runner/cpu_wait.py)."""

    scenario: str
    counters: dict[str, int]
    app_accepted: int | None = None
    app_requests: int | None = None
    cpu_wait_ms: float = 0.0
    steal_ms: float = 0.0


class BenchProgress(msgspec.Struct, frozen=True, tag="bench_progress", tag_field="event"):
    """Requests of one bench run answered so far (server, mode)."""

    server: str
    mode: str
    done: int
    requests: int


class BenchMeasured(msgspec.Struct, frozen=True, tag="bench_measured", tag_field="event"):
    """One bench run: every request's latency (connect start to the response's last
    byte), the run's total time, the TcpExt counter deltas around it, and the CPU
    time the server process used meanwhile (/proc/PID/schedstat)."""

    server: str
    mode: str
    concurrency: int
    total_ms: float
    latencies_us: list[float]
    syn_data_acked: int
    counters: dict[str, int]
    round: int = 1
    server_cpu_ms: float = 0.0
    client_cpu_ms: float = 0.0  # tfo-bench-client's own CPU (getrusage) meanwhile


class DelayerLateness(msgspec.Struct, frozen=True):
    """How late the NFQUEUE delayer released its packets over the whole run, from its
    statistics: each packet's verdict time after its due time (read time + D), in
    microseconds."""

    median_us: float
    p99_us: float
    max_us: float


class Done(msgspec.Struct, frozen=True, tag="done", tag_field="event"):
    """The run ended: the delayer's statistics line as it printed it (for a report), and
    its lateness, typed (None without a delayer)."""

    delayer_stats: str = ""
    delayer_lateness: DelayerLateness | None = None


class Failed(msgspec.Struct, frozen=True, tag="error", tag_field="event"):
    """The run cannot go on: a one-line reason and the fix (the CLI's exit 2)."""

    reason: str
    fix: str = ""


Event = (
    Setup
    | SlotWait
    | SlotTaken
    | ScenarioStarted
    | Note
    | Iteration
    | Captured
    | Counters
    | BenchProgress
    | BenchMeasured
    | Done
    | Failed
)
_decoder = msgspec.json.Decoder(Event)


_LENGTH = struct.Struct(">I")
MAX_FRAME_BYTES = 1 << 30  # a frame claiming more is not the runner talking


def frame(event: Event) -> bytes:
    """One event as the runner writes it: its JSON's length, then the JSON."""
    body = msgspec.json.encode(event)
    return _LENGTH.pack(len(body)) + body


def decode_event(body: str | bytes) -> Event:
    """One frame's JSON; msgspec.ValidationError if it is not an Event."""
    event: Event = _decoder.decode(body)
    return event


class FrameError(Exception):
    """The runner's stream ended inside a frame, or announced an impossible one."""


async def read_frame(reader: asyncio.StreamReader) -> bytes | None:
    """The next frame's JSON; None at a clean end of the stream (between frames)."""
    try:
        head = await reader.readexactly(_LENGTH.size)
    except asyncio.IncompleteReadError as err:
        if err.partial:
            raise FrameError(
                f"the stream ended inside a frame's length ({err.partial!r})"
            ) from None
        return None
    (length,) = _LENGTH.unpack(head)
    if length > MAX_FRAME_BYTES:
        raise FrameError(f"a frame of {length} bytes announced")
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError as err:
        raise FrameError(
            f"the stream ended {len(err.partial)} bytes into a {length}-byte frame"
        ) from None
