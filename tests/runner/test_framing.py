"""Runner events of any size cross to the parent: length-prefixed frames, no line limit.

A real subprocess (tests/runner/framed_runner.py) stands in for the runner, so
the parent's stream_events reads exactly what a runner's stdout gives it.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.runner.framed_runner import BIG_FRAME_BYTES
from tfolab.model.options import Timestamps
from tfolab.runner.client import stream_events
from tfolab.runner.protocol import (
    Captured,
    CapturedRow,
    Done,
    Event,
    Failed,
    FrameError,
    Job,
    decode_event,
    frame,
    read_frame,
)

JOB = Job("handshake", 0.0, "none", ())


def _events(mode: str, monkeypatch: pytest.MonkeyPatch) -> list[Event]:
    monkeypatch.setenv("FRAMED_RUNNER_MODE", mode)

    async def collect() -> list[Event]:
        return [e async for e in stream_events(JOB, module="tests.runner.framed_runner")]

    return asyncio.run(collect())


def test_an_event_of_megabytes_crosses_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    events = _events("big", monkeypatch)
    assert [type(e) for e in events] == [Captured, Done]
    captured = events[0]
    assert isinstance(captured, Captured)
    assert len(captured.frames[0][1]) == BIG_FRAME_BYTES  # 76 times asyncio's line limit


def test_a_runner_dying_inside_a_frame_is_a_failure_with_its_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events = _events("torn", monkeypatch)
    assert len(events) == 1 and isinstance(events[0], Failed)
    assert "bytes into a" in events[0].reason and "torn on purpose" in events[0].reason


def test_a_frame_that_is_no_event_is_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    events = _events("garbage", monkeypatch)
    assert len(events) == 1 and isinstance(events[0], Failed)
    assert "said something unexpected" in events[0].reason


def test_a_runner_past_its_deadline_is_a_failure_and_is_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The deadline ends in a Failed that says so, never a TimeoutError (CI's emulated VM
    once spent 596 s comparing one 818 ms transfer: an internal error), and the silent
    runner is killed at once."""
    monkeypatch.setenv("FRAMED_RUNNER_MODE", "silent")

    async def collect() -> tuple[list[Event], float]:
        loop = asyncio.get_running_loop()
        started = loop.time()
        stream = stream_events(JOB, module="tests.runner.framed_runner", timeout_s=1.0)
        events = [e async for e in stream]
        return events, loop.time() - started

    events, took = asyncio.run(collect())
    assert len(events) == 1 and isinstance(events[0], Failed)
    assert "no result within 1 s" in events[0].reason
    assert took < 10  # killed, not waited for (it sleeps a minute)


def test_frames_round_trip_past_the_old_line_limit() -> None:
    row = CapturedRow(1.0, 1, "client", ["ACK"], 1, 1, 70_000, [Timestamps()], 512)
    event = Captured("plain", [row] * 2000, [(7, b"\n" * 70_000)])

    async def read_back() -> list[bytes | None]:
        reader = asyncio.StreamReader()
        reader.feed_data(frame(event) + frame(Done()))
        reader.feed_eof()
        return [await read_frame(reader), await read_frame(reader), await read_frame(reader)]

    first, second, end = asyncio.run(read_back())
    assert first is not None and len(first) > 64 * 1024
    assert decode_event(first) == event and second is not None
    assert isinstance(decode_event(second), Done) and end is None


def test_a_stream_cut_inside_the_length_is_an_error() -> None:
    async def read_cut() -> bytes | None:
        reader = asyncio.StreamReader()
        reader.feed_data(b"\x00\x00")
        reader.feed_eof()
        return await read_frame(reader)

    with pytest.raises(FrameError, match="inside a frame's length"):
        asyncio.run(read_cut())
