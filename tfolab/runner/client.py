"""The parent side: start a runner process and stream its events, asyncio style.

Rules: no privileges or namespaces here: this is ordinary user-space code that
spawns `python -m tfolab.runner`, feeds it a Job and yields its events (length-
prefixed frames, protocol.read_frame: no line-length limit).
Leaving the `async for` early, an exception or a cancellation kills the runner;
everything it started dies with it (see tfolab/runner/__main__.py).
With `hold_cap_s`, a runner that still runs that long after taking its
measurement slot (SlotTaken) is killed, which frees the slot at once, and the
stream ends with a Failed saying so.
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
    SlotTaken,
    decode_event,
    read_frame,
)


async def stream_events(
    job: Job | BenchJob,
    *,
    timeout_s: float = 600.0,
    module: str = "tfolab.runner",
    hold_cap_s: float | None = None,
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
        held_until: float | None = None  # loop time by which a held slot must be given back
        try:
            async with asyncio.timeout(timeout_s):
                while not finished:
                    try:
                        async with asyncio.timeout_at(held_until):
                            body = await read_frame(process.stdout)
                    except FrameError as err:
                        broken = f" ({err})"
                        break
                    except TimeoutError:
                        if held_until is None or asyncio.get_running_loop().time() < held_until:
                            raise
                        with contextlib.suppress(ProcessLookupError):
                            process.kill()  # its slot is free at once (core.slots)
                        yield Failed(
                            f"stopped: it held a measurement slot for {hold_cap_s:g} s, the most "
                            "one served run or bench may",
                            "ask for fewer iterations, requests or delays, or smaller delays",
                        )
                        finished = True
                        break
                    if body is None:
                        break
                    try:
                        event = decode_event(body)
                    except (msgspec.ValidationError, msgspec.DecodeError) as err:
                        yield Failed(f"the runner said something unexpected: {err}", _REPORT_FIX)
                        finished = True
                        break
                    if isinstance(event, SlotTaken) and hold_cap_s is not None:
                        held_until = asyncio.get_running_loop().time() + hold_cap_s
                    yield event
                    finished = isinstance(event, Done | Failed)
        except TimeoutError:
            # the deadline counts the caller's own time between events (its comparison)
            yield Failed(
                f"no result within {timeout_s:g} s (the comparison included): the runner "
                "was stopped",
                "ask for fewer iterations or a smaller delay; run `tfolab doctor` if this "
                "machine is much slower than usual",
            )
            return
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
