"""A burst of data segments racing the reader it wakes: which ACKs the kernel may merge.

When several data segments arrive back to back (one GSO packet segmented in
software, or a flight released by the delay at one instant), the first one
wakes the application blocked in read() on that socket. Each later segment
is processed either in the softirq, before the woken reader takes the socket
lock, and then ACKed on its own (quick-ACK mode, or two full segments), or
after it, in the socket's backlog, where Linux 6.1's tcp_add_backlog
coalesces it with the next and from 6.7 __tcp_ack_snd_check defers its ACK
to tcp_release_cb (TCP_ACK_DEFERRED): then one ACK covers the rest of the
burst. Who wins is the host's scheduling, at any delay (the captures are in
docs/TCP-NOTES.md, "A burst races the reader it wakes" and the two notes
after it). Where the reader also lets the socket go before the next segment
arrives, or accept() held it as the first arrived, every later window
differs too: those outcomes are lock points (loop.py, backlog.py), whole
other timelines the comparison may take.

Rules:
- `Burst.add` records each data segment of the burst: where it ends and what
  it charges the receive memory as a fresh skb (truesize).
- The ACK of a data segment that is neither the burst's first (processed
  before any wake-up) nor its last is a race: `is_race`. A reader that set
  SO_RCVLOWAT is woken only by the segment that brings the unread bytes to its
  mark (or closes the window: Socket.epollin_ready), so only the ACKs after
  that segment race it. So is the first's,
  when a segment before it in the burst already woke the application
  (`Burst.woken`): the ACK that completes the handshake wakes accept() through
  tcp_rcv_state_process's sk_state_change, and the server then reads the new
  socket while the request's segments that arrived with that ACK are still
  being processed. The last one's ACK
  is certain (on its own, or the merged one), but its window depends on the
  race's outcome: `merged_windows` gives the window field the merged ACK
  carries for every point at which the reader may have taken the lock (the
  segments before it read and freed, those after it queued; tcp_select_window
  never moves the right edge left of the window last advertised).
- When the last segment is not ACKed at once (its ACK is delayed), the
  merged ACK still leaves: the race ACK the reader deferred goes at
  tcp_release_cb (6.7+), or the coalesced skb is ACKed at once as more than
  one full frame (6.1), acknowledging the whole burst. So the burst's last
  race ACK (`deferred_race_ack`) leaves either way, acknowledging its own
  segment or the burst's end (delack_timer.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tfolab.model.rcv_space import RcvSpace


@dataclass
class BurstStep:
    end: int  # rcv_nxt after this segment
    truesize: int  # what it charges as a fresh skb
    acked: tuple[int, int] | None = None  # (rcv_wup, rcv_wnd) after its own ACK left
    race: bool = False  # that ACK may be merged away
    ack_event: int | None = None  # the Segment event of that ACK
    # it woke the reader (tcp_data_ready: tcp_epollin_ready with sk_rcvlowat; every data
    # segment does, unless the reader set SO_RCVLOWAT above what is queued)
    wakes: bool = True


@dataclass
class Burst:
    steps: list[BurstStep] = field(default_factory=list)
    open: bool = False  # the segment being received belongs to this burst
    woken: bool = False  # a segment before its data woke the application

    def add(self, end: int, truesize: int) -> None:
        if not self.open:
            self.steps = []
            self.open = True
            self.woken = False
        self.steps.append(BurstStep(end, truesize))

    def woke_reader(self, wakes: bool) -> None:
        """Did the data segment just added wake the reader (Socket.epollin_ready)?"""
        if self.open and self.steps:
            self.steps[-1].wakes = wakes

    def _first_waker(self) -> int:
        """The index of the step after which a reader may hold the socket (0 when a
        segment before the burst's data woke it)."""
        if self.woken:
            return 0
        return next((k for k, step in enumerate(self.steps) if step.wakes), len(self.steps))

    def wake(self) -> None:
        """A segment without data, with more of the burst behind it, woke the application."""
        self.steps = []
        self.open = True
        self.woken = True

    def close(self) -> None:
        self.open = False
        self.woken = False

    def is_race(self, more_in_burst: bool) -> bool:
        """Is the ACK of the data segment just added a race (not the last, and a reader
        was woken before it: by the burst's first data segment, or by an earlier wake)?"""
        return (
            self.open
            and more_in_burst
            and (self.woken or self._first_waker() < len(self.steps) - 1)
        )

    def acked(self, rcv_wup: int, rcv_wnd: int, race: bool, ack_event: int) -> None:
        """The data segment just added was ACKed on its own."""
        if self.open and self.steps:
            self.steps[-1].acked = (rcv_wup, rcv_wnd)
            self.steps[-1].race = race
            self.steps[-1].ack_event = ack_event

    def deferred_race_ack(self) -> int | None:
        """The burst's last ACK, if it was a race: the Segment event a reader that won may
        defer to the burst's end (None when a later step was ACKed for certain, or none)."""
        acked = [step for step in self.steps[:-1] if step.acked is not None]
        if not self.open or not acked or not acked[-1].race:
            return None
        return acked[-1].ack_event

    def merged_windows(self, space: RcvSpace, rcv_mss: int, rcv_nxt: int) -> tuple[int, ...]:
        """Window fields the last segment's ACK may carry when the reader won the race earlier."""
        if not self.open or not any(step.race for step in self.steps):
            return ()
        windows = set()
        for index, step in enumerate(self.steps[:-1]):
            if index < self._first_waker():
                continue  # no reader was awake yet to take the socket after this one
            later = self.steps[index + 1 : -1]
            if step.acked is None or not all(s.race or s.acked is None for s in later):
                continue
            rcv_wup, rcv_wnd = step.acked
            queued = sum(s.truesize for s in self.steps[index + 1 :])
            windows.add(space.window_if_read(rcv_mss, queued, rcv_wnd, rcv_nxt - rcv_wup))
        return tuple(sorted(windows))
