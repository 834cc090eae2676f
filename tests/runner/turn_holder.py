"""A measuring turn in a process of its own, as a runner holds one (for tests/runner/test_turn.py).

argv: the slots folder, then "lab" (two sleeping stand-ins for the echo server and
the delayer, at real-time priority where permitted) or "bench" (the slot alone).
It prints, each line flushed at once: "SETTING-UP" before it waits for quiet,
"SETUP <setup_ms>" once set up, "EVENT <name> <json>" for every event the turn
emits, and "MEASURING <server> <delayer>" once it holds its slot. Then it reads
one line: "raise" raises inside the turn, anything else leaves it normally (a
signal meanwhile ends it as it would a runner). After the turn it prints
"AFTER <json>" (its scheduling policy, whether its descriptors are those it had
before the turn, its SIGTERM handler, whether the stand-ins still run) and stays
until its stdin closes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec

from tfolab.core.slots import SlotTable
from tfolab.runner import priority
from tfolab.runner.protocol import Event
from tfolab.runner.turn import LabProcesses, MeasuringTurn

# Like the lab's own processes they die with the turn's process; asked to stop (SIGTERM),
# they take half a second, so that a slot given back before them would show.
SLEEPER = [
    sys.executable,
    "-c",
    "import signal, sys, time; from tfolab.core import lifetime; lifetime.die_with_parent(); "
    "signal.signal(signal.SIGTERM, lambda *_: (time.sleep(0.5), sys.exit(0))); time.sleep(600)",
]


def say(line: str) -> None:
    print(line, flush=True)


def emit(event: Event) -> None:
    say(f"EVENT {type(event).__name__} {msgspec.json.encode(event).decode()}")


def descriptors() -> list[str]:
    return sorted(os.listdir("/proc/self/fd"))


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait()


def main() -> None:
    directory, what = Path(sys.argv[1]), sys.argv[2]
    table = SlotTable.open(directory)
    before = descriptors()
    lab: list[subprocess.Popen[bytes]] = []
    try:
        with MeasuringTurn(table, emit) as turn:
            say("SETTING-UP")
            started = time.monotonic()
            with turn.setting_up():
                lab = [subprocess.Popen(SLEEPER) for _ in range(2)]
                for process in lab:
                    turn.dismantle_at_end(lambda process=process: stop(process))
                say(f"SETUP {turn.setup_ms(started)}")
            realtime = priority.realtime_permitted()[0]
            server, delayer = (process.pid for process in lab)
            turn.take_slot(LabProcesses(server, delayer, realtime) if what == "lab" else None)
            say(f"MEASURING {server} {delayer}")
            if sys.stdin.readline().strip() == "raise":
                raise RuntimeError("an error inside the turn")
    except RuntimeError:
        pass
    after = {
        "policy": os.sched_getscheduler(0),
        "same_descriptors": descriptors() == before,
        "sigterm_default": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,
        "lab_running": [process.poll() is None for process in lab],
    }
    say(f"AFTER {json.dumps(after)}")
    sys.stdin.read()


if __name__ == "__main__":
    main()
