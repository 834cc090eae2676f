"""The parent side: start a runner process and stream its events, asyncio style.

Rules: no privileges or namespaces here: this is ordinary user-space code that
spawns `python -m tfolab.runner`, feeds it a Job and yields its events (length-
prefixed frames, protocol.read_frame: no line-length limit).
Leaving the `async for` early, an exception or a cancellation kills the runner;
everything it started dies with it (see tfolab/runner/__main__.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator

import msgspec

from tfolab.core.errors import UserError
from tfolab.runner.protocol import (
    BenchJob,
    Done,
    Event,
    Failed,
    FrameError,
    Job,
    decode_event,
    read_frame,
)


async def stream_events(
    job: Job | BenchJob, *, timeout_s: float = 600.0, module: str = "tfolab.runner"
) -> AsyncIterator[Event]:
    """Yield the runner's events; the last one is Done or Failed.

    `module` is the runner's entry point: `tfolab.runner` for a lab's Job,
    `tfolab.runner.bench_main` for one delay of the bench (a BenchJob).
    """
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            module,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as err:
        raise UserError(
            f"cannot start the lab runner ({sys.executable}): {err.strerror}",
            "check that this Python and tfolab are readable by your user",
        ) from None
    assert process.stdin is not None and process.stdout is not None
    finished = False
    try:
        process.stdin.write(job.to_json().encode())
        await process.stdin.drain()
        process.stdin.close()
        broken = ""
        async with asyncio.timeout(timeout_s):
            while not finished:
                try:
                    body = await read_frame(process.stdout)
                except FrameError as err:
                    broken = f" ({err})"
                    break
                if body is None:
                    break
                try:
                    event = decode_event(body)
                except (msgspec.ValidationError, msgspec.DecodeError) as err:
                    yield Failed(f"the runner said something unexpected: {err}", _REPORT_FIX)
                    finished = True
                    break
                yield event
                finished = isinstance(event, Done | Failed)
        if not finished:
            stderr = (
                (await process.stderr.read()).decode(errors="replace") if process.stderr else ""
            )
            await process.wait()
            last = (stderr.strip().splitlines() or ["no message"])[-1]
            yield Failed(
                f"the runner stopped unexpectedly{broken} (exit {process.returncode}): {last}",
                _REPORT_FIX,
            )
    finally:
        if finished:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 3)
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(process.wait(), 5)


_REPORT_FIX = "run `tfolab doctor`, and report this if it persists"
