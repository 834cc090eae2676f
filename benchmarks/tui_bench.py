"""How fast the UI is: launch to first frame, and a re-simulation after a change.

Prints figures, asserts nothing. Targets: first frame < 1 s, re-simulation
< 50 ms. Run: python benchmarks/tui_bench.py [--repeat N] [--no-tmux]

- in-process: TfolabApp.run_test() until the start screen is mounted (the
  imports are timed separately, from a fresh interpreter).
- a real terminal: `python -m tfolab` under tmux, until the start screen's
  text is on the pane (polls capture-pane every 10 ms), when tmux is there.
- re-simulation: the lab screen's delay field changed, until the ladder has
  the new timeline (plan + predict + layout), for each lab's first scenario.
"""

from __future__ import annotations

import argparse
import asyncio
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


def tmux_first_frame_seconds() -> float | None:
    if shutil.which("tmux") is None:
        return None
    session = f"tfolab-bench-{time.monotonic_ns()}"
    started = time.perf_counter()
    subprocess.run(
        [
            "tmux",
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            "100",
            "-y",
            "32",
            f"{sys.executable} -m tfolab",
        ],
        check=True,
    )
    try:
        while time.perf_counter() - started < 10:
            pane = subprocess.run(
                ["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True
            ).stdout
            if "The three-way handshake" in pane and "cookie-request" in pane:
                return time.perf_counter() - started
            time.sleep(0.01)
        return None
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


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
        seconds = tmux_first_frame_seconds()
        shown = f"{seconds * 1000:7.1f} ms" if seconds is not None else "    n/a"
        print(f"first frame, `python -m tfolab` in tmux:   {shown}  target < 1000")
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
