"""How fast the UI is: launch to first frame, and a re-simulation after a change.

Prints figures, asserts nothing. Targets: first frame in a terminal < 0.5 s
(the median of --repeat cold starts), re-simulation < 50 ms.
Run: python benchmarks/tui_bench.py [--repeat N] [--no-tmux]

- in-process: TfolabApp.run_test() until the start screen is mounted (the
  imports are timed separately, from a fresh interpreter).
- a real terminal: `python -m tfolab` under a tmux server of its own (each
  start is cold: a fresh server, a fresh interpreter), until the start
  screen's labs are on the pane (the first frame), and until the first lab's
  guide is drawn beside them (polls capture-pane every 10 ms).
- re-simulation: the lab screen's delay field changed, until the ladder has
  the new timeline (plan + predict + layout), for each lab's first scenario.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import time

IMPORT_SNIPPET = (
    "import time; t = time.perf_counter(); import tfolab.tui.app; print(time.perf_counter() - t)"
)


def import_seconds() -> float:
    done = subprocess.run([sys.executable, "-c", IMPORT_SNIPPET], capture_output=True, text=True)
    return float(done.stdout.strip())


async def first_frame_seconds() -> float:
    from tfolab.tui.app import TfolabApp
    from tfolab.tui.screens.start import StartScreen

    started = time.perf_counter()
    app = TfolabApp()
    async with app.run_test(size=(100, 32)) as pilot:
        while not isinstance(app.screen, StartScreen) or not app.screen.is_mounted:
            await pilot.pause(0.001)
        return time.perf_counter() - started


GUIDE_TEXT = "Before a TCP connection can carry a single byte"  # handshake.md's first line


def tmux_start_seconds() -> tuple[float, float] | None:
    """(first frame, guide drawn) of one cold `python -m tfolab` in tmux, or None."""
    if shutil.which("tmux") is None:
        return None
    tmux = ["tmux", "-L", f"tfolab-bench-{os.getpid()}-{time.monotonic_ns()}"]
    started = time.perf_counter()
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", "100", "-y", "32", f"{sys.executable} -m tfolab"],
        check=True,
    )
    first_frame = None
    try:
        while time.perf_counter() - started < 10:
            pane = subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True, text=True)
            now = time.perf_counter() - started
            labs = "The three-way handshake" in pane.stdout and "cookie-request" in pane.stdout
            if first_frame is None and labs:
                first_frame = now
            if first_frame is not None and GUIDE_TEXT in pane.stdout:
                return first_frame, now
            time.sleep(0.01)
        return None
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


async def resimulate_seconds(lab: str, repeat: int) -> list[float]:
    from textual.widgets import Input

    from tfolab.tui.app import TfolabApp
    from tfolab.tui.screens.lab import LabScreen

    app = TfolabApp(hz=250, open_lab=lab)
    timings: list[float] = []
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LabScreen)
        delay = screen.query_one("#delay", Input)
        for k in range(repeat):
            value = f"{10 + (k % 2) * 15}"
            started = time.perf_counter()
            delay.value = value  # Input.Changed -> ParamsPanel -> simulate -> ladder
            while screen.result is None or screen.result.delay_ms != float(value):
                await pilot.pause(0)
            await pilot.pause(0)  # the ladder's repaint
            timings.append(time.perf_counter() - started)
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--no-tmux", action="store_true")
    args = parser.parse_args()
    print(f"import tfolab.tui.app (fresh interpreter): {import_seconds() * 1000:7.1f} ms")
    frames = [asyncio.run(first_frame_seconds()) for _ in range(3)]
    print(
        f"first frame, in-process run_test:          {min(frames) * 1000:7.1f} ms "
        f"(best of 3; median {statistics.median(frames) * 1000:.1f})  target < 1000"
    )
    if not args.no_tmux:
        starts = [tmux_start_seconds() for _ in range(args.repeat)]
        seen = [s for s in starts if s is not None]
        if not seen:
            print("first frame, `python -m tfolab` in tmux:   n/a (no tmux, or no frame in 10 s)")
        for index, what in enumerate(("first frame", "guide drawn")):
            values = [s[index] * 1000 for s in seen]
            if values:
                print(
                    f"{what + ', `python -m tfolab` in tmux:':<42} median "
                    f"{statistics.median(values):6.1f} ms, max {max(values):6.1f} ms over "
                    f"{len(values)} cold starts" + ("  target < 500" if index == 0 else "")
                )
    for lab in ("handshake", "fastopen", "delack"):
        timings = asyncio.run(resimulate_seconds(lab, args.repeat))
        print(
            f"re-simulate {lab:<10} after a delay change:  median "
            f"{statistics.median(timings) * 1000:6.1f} ms, max {max(timings) * 1000:6.1f} ms  "
            "target < 50"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
