"""A stand-in runner for tests: it takes a real measurement slot (in $TFOLAB_SLOTS_DIR), says
so as the runner does (SlotTaken), then holds it and never finishes."""

from __future__ import annotations

import sys
import time

from tfolab.core import slots
from tfolab.runner.protocol import SlotTaken, frame
from tfolab.runner.turn import TEARDOWN_SETTLE_S

if __name__ == "__main__":
    sys.stdin.read()
    slot = slots.SlotTable.open().acquire(settle_s=TEARDOWN_SETTLE_S)
    sys.stdout.buffer.write(frame(SlotTaken(slot.waited_ms, slot.size, slot.ahead)))
    sys.stdout.buffer.flush()
    time.sleep(3600)
