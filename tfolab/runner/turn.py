"""A runner's turn at measuring: set up while nobody measures, take a slot, make room,
and give everything back.

Rules:
- One turn per runner process, open from before its setup to after its
  teardown: `with MeasuringTurn(table, emit) as turn:`. Leaving it, whatever
  the way (the end, an exception, SIGTERM or SIGHUP: while the turn is open
  they raise SystemExit), first dismantles what `dismantle_at_end` was given,
  last given first (servers, the capture, the delayer: their teardown is
  kernel work that would land in the next run's measurement), then gives the
  served class its CPUs back, this process normal scheduling, and the slot to
  the next in line, in that order and exactly once. SIGTERM, SIGHUP and
  SIGINT arriving meanwhile wait until it is done. A SIGKILL frees the slot
  in the kernel; the class then stays off its CPU until the next run gives back.
- Setup (`with turn.setting_up():`) is kernel work (a namespace, a delayer, a
  capture ring, a server) that on a small machine shows in a measuring run's
  timings: it holds the slots' quiet lock exclusively, so it waits while any
  run measures. That wait is time in line (SlotTaken.waited_ms), not setup
  (`setup_ms`).
- `take_slot()` waits in line (a SlotWait whenever the line moves), then
  TEARDOWN_SETTLE_S after the slot's last hand-over (the kernel destroys a
  finished lab's namespace after its runner is gone, asynchronously), then for
  setups in progress, and says SlotTaken. Given a lab's processes, the run
  then leads an autogroup of its own at nice 0 (until then it waited in its
  parent's; a served UI's is at nice 19), keeps its served class off the last
  CPUs (tfolab.runner.served_class) and, where permitted, runs itself and the
  server at SCHED_FIFO 5 (tfolab.runner.priority). Without, the turn is the
  slot alone: the bench's processes stay on normal scheduling.
- A turn is entered in the main thread (it sets signal handlers).
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Any

from tfolab.core import autogroup
from tfolab.core.slots import Slot, SlotTable
from tfolab.runner import priority, served_class
from tfolab.runner.protocol import Event, SlotTaken, SlotWait

TEARDOWN_SETTLE_S = 0.15  # after a hand-over, before the new holder measures
STOPPING = (signal.SIGTERM, signal.SIGHUP)  # unwind an open turn (SystemExit)
HELD_BACK = (*STOPPING, signal.SIGINT)  # wait while a turn gives back

Emit = Callable[[Event], None]
# What signal.signal returns: a handler, SIG_DFL or SIG_IGN, or None (one not set from Python).
Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


@dataclass(frozen=True)
class LabProcesses:
    """A lab's processes, as its turn treats them."""

    server: int
    delayer: int | None  # tfo-delay keeps its own real-time priority
    realtime: bool  # SCHED_FIFO is permitted here (priority.realtime_permitted)


class MeasuringTurn:
    """One runner's turn: its setup, its slot, room and priority while it measures."""

    def __init__(self, table: SlotTable, emit: Emit) -> None:
        self.table = table
        self._emit = emit
        self._dismantle = contextlib.ExitStack()
        self._handlers: dict[signal.Signals, Handler] = {}
        self._open = False
        self._gate_ms = 0.0  # waited for quiet before setting up
        self._slot: Slot | None = None
        self._moved: list[int] = []  # the served class, off the last CPUs
        self._realtime = False

    def __enter__(self) -> MeasuringTurn:
        for signum in STOPPING:
            self._handlers[signum] = signal.signal(signum, _unwind)
        self._open = True
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        arrived: list[int] = []
        hold = _hold(arrived)
        try:
            for signum in HELD_BACK:  # SIGTERM and SIGHUP first: they would unwind this
                self._handlers.setdefault(signum, signal.signal(signum, hold))
            self._dismantle.close()
        finally:
            self._give_back()
            self._open = False
            for which, handler in self._handlers.items():
                if handler is not None:
                    signal.signal(which, handler)
            self._handlers.clear()
            for number in arrived:
                signal.raise_signal(number)

    @contextlib.contextmanager
    def setting_up(self) -> Iterator[None]:
        """Hold while setting up: never while another run measures."""
        asked = time.monotonic()
        with self.table.setting_up():
            self._gate_ms = (time.monotonic() - asked) * 1000
            yield

    def setup_ms(self, started: float) -> float:
        """The setup's own time since `started` (time.monotonic()), less the wait for quiet."""
        return round((time.monotonic() - started) * 1000 - self._gate_ms, 1)

    def dismantle_at_end(self, stop: Callable[[], object]) -> None:
        """Call `stop` as the turn ends, before the slot is given back (last given, first)."""
        self._dismantle.callback(stop)

    def take_slot(self, lab: LabProcesses | None = None) -> None:
        """Wait in line for a measurement slot, then make room for `lab` to measure."""
        if not self._open or self._slot is not None:
            raise RuntimeError("take_slot() once, inside `with MeasuringTurn(...)`")
        size = self.table.size
        self._slot = slot = self.table.acquire(
            lambda ahead: self._emit(SlotWait(ahead, size)), settle_s=TEARDOWN_SETTLE_S
        )
        if lab is not None:
            autogroup.new_session()
            delayer = () if lab.delayer is None else (lab.delayer,)
            self._moved = served_class.spare_for_measuring(size, (lab.server, *delayer))
        self._emit(SlotTaken(round(self._gate_ms + slot.waited_ms, 1), slot.size, slot.ahead))
        if lab is not None and lab.realtime:
            self._realtime = True
            priority.prefer_realtime((lab.server,))

    def _give_back(self) -> None:
        """The class every CPU, this process normal scheduling, the slot to the next in line."""
        moved, self._moved = self._moved, []
        served_class.give_back(moved)
        if self._realtime:
            self._realtime = False
            priority.normal_scheduling()
        slot, self._slot = self._slot, None
        if slot is not None:
            slot.release()


def _unwind(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def _hold(arrived: list[int]) -> Callable[[int, FrameType | None], None]:
    def hold(signum: int, _frame: FrameType | None) -> None:
        arrived.append(signum)

    return hold
