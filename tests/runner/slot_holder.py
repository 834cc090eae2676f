"""A process that takes a measurement slot as a runner does (its settle time after a
hand-over included) and holds it until its stdin closes (for tests).

Prints "WAIT <ahead>" for every line update and "HOLD <index> <waited_ms> <ahead>"
once it has the slot, each followed by " @<CLOCK_MONOTONIC ns>" and flushed at
once, so the test can follow along and order events between processes.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tfolab.core.slots import SlotTable
from tfolab.runner.turn import TEARDOWN_SETTLE_S


def main() -> None:
    table = SlotTable.open(Path(sys.argv[1]))
    slot = table.acquire(
        lambda ahead: print(f"WAIT {ahead} @{time.monotonic_ns()}", flush=True),
        settle_s=TEARDOWN_SETTLE_S,
    )
    print(f"HOLD {slot.index} {slot.waited_ms} {slot.ahead} @{time.monotonic_ns()}", flush=True)
    sys.stdin.read()
    slot.release()


if __name__ == "__main__":
    main()
