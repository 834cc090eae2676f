"""Time in the model: integer nanoseconds, a jiffies clock and the timer wheel.

Rules:
- The loop's time is an integer number of nanoseconds, so arithmetic is exact
  and the same input always gives the same timeline. Milliseconds (floats)
  only appear at the edges (the API and the recorded events).
- The kernel's timers run on jiffies: a counter that ticks HZ times a second.
  The tick edges sit at `phase + k * tick`; the phase is unknowable on a real
  machine, so it is a parameter (the predictions' tolerance covers it).
  An event exactly on a tick edge sees the new jiffies value (the tick
  interrupt ran first).
- A timer armed to expire at jiffies value E fires on the tick where the
  timer wheel's bucket for E comes due. `calc_index()` in kernel/time/timer.c
  rounds up by one granule so a timer never fires early: on level 0 (under
  63 jiffies away) that is E + 1. Hence a 40 ms delayed ACK armed at HZ=250
  fires 40 < delta <= 44 ms after it was armed.
- Bucket edges are absolute (multiples of the level's granularity in the real
  jiffies counter), and the counter's real value is unknown: the model's
  counter starts near 0. A connection's `wheel_offset` (0 to 7 ticks) says
  where its timers' level-1 buckets sit: the real counter is the model's plus
  the offset. The client's and the server's timers on one host share it, so
  it decides which of two timers armed a few ticks apart fires first (the SYN
  timer and the SYN-ACK timer, syn_timer.py, synack_timer.py).
- A timer's work (what it sends) happens in the timer softirq, microseconds
  after its tick edge; where a packet it sent arrives D later within that much
  of another tick edge, the jiffy the peer sees is a race (LATE_TIMERS); and a
  timer whose softirq runs late may run as a segment arrives, both sent at once
  (COALESCED_TIMERS).
"""

from __future__ import annotations

from dataclasses import dataclass

NS_PER_SEC = 1_000_000_000
NS_PER_MS = 1_000_000

# kernel/time/timer.c: LVL_CLK_SHIFT = 3, LVL_BITS = 6
_LVL_CLK_SHIFT = 3
_LVL_BITS = 6
# A connection's wheel offset (Env.wheel_offsets) counts quarter ticks within a level-1
# bucket (8 ticks: 0-31); LATE_TIMERS added to it says its timers' work comes late
# (Env.timer_lateness_ns)
LATE_TIMERS = 32
# ... and COALESCED_TIMERS added instead: a timer due within a tick before a segment
# reaches its socket runs at that segment's arrival, just before it (Env.timers_coalesce)
COALESCED_TIMERS = 64


def ms_to_ns(ms: float) -> int:
    return round(ms * NS_PER_MS)


@dataclass(frozen=True)
class JiffyClock:
    hz: int
    phase_ns: int  # where the tick edges sit: phase + k * tick, 0 <= phase < tick

    @property
    def tick_ns(self) -> float:
        return NS_PER_SEC / self.hz

    @property
    def tick_ms(self) -> float:
        return 1000.0 / self.hz

    def jiffies(self, t_ns: int) -> int:
        """The jiffies counter at time t (exact integer arithmetic)."""
        return ((t_ns - self.phase_ns) * self.hz) // NS_PER_SEC

    def tick_time(self, jiffy: int) -> int:
        """The instant the counter becomes `jiffy` (rounded up to a nanosecond)."""
        return self.phase_ns + -((-jiffy * NS_PER_SEC) // self.hz)

    def ms_to_jiffies(self, ms: float) -> int:
        """msecs_to_jiffies(): rounds up."""
        return -((-round(ms * NS_PER_MS) * self.hz) // NS_PER_SEC)

    def ns_to_jiffies_up(self, t_ns: int) -> int:
        """usecs_to_jiffies() of a duration: rounds up."""
        return -((-t_ns * self.hz) // NS_PER_SEC)

    def jiffies_to_ms(self, jiffies: int) -> float:
        return jiffies * 1000.0 / self.hz

    def timer_fires_at(self, expires: int, now_ns: int, wheel_offset: int = 0) -> int:
        """When the timer wheel runs a timer set to expire at jiffies `expires`, the
        real counter being the model's plus `wheel_offset` (calc_index's bucket is
        computed on the real value)."""
        now_j = self.jiffies(now_ns)
        delta = max(expires - now_j, 0)
        level = 0
        while level < 8 and delta >= _level_start(level + 1):
            level += 1
        shift = level * _LVL_CLK_SHIFT
        bucket = (((expires + wheel_offset) >> shift) + 1) << shift
        return self.tick_time(bucket - wheel_offset)

    def wheel_granularity(self, expires: int, now_ns: int) -> int:
        """The width in ticks of the bucket a timer set now for jiffies `expires` lands
        in (LVL_GRAN of its level: 1 under 63 jiffies away, 8 under 504, ...). Which
        bucket of that width depends on the jiffies counter's real value, which the
        model's clock (starting near 0) cannot know; a timer armed exactly on a
        bucket's edge keeps its phase to the grid."""
        delta = max(expires - self.jiffies(now_ns), 0)
        level = 0
        while level < 8 and delta >= _level_start(level + 1):
            level += 1
        return 1 << (level * _LVL_CLK_SHIFT)


def _level_start(level: int) -> int:
    """LVL_START(n): the first delta (in jiffies) that lands on level n."""
    if level == 0:
        return 0
    return ((1 << _LVL_BITS) - 1) << ((level - 1) * _LVL_CLK_SHIFT)


@dataclass(frozen=True)
class Link:
    """Loopback with a one-way delay: every segment arrives exactly D after it leaves.

    The reference is netem on lo: the qdisc orphans the queued skb, so while it
    waits it is no longer charged to the sending socket, and autocorking never
    holds a write because of it (see nagle.py). The NFQUEUE stand-in holds
    packets at the receiving end, where loopback_xmit has orphaned them too
    (docs/TCP-NOTES.md, "Delay emulation").
    """

    one_way_delay_ns: int

    def arrival(self, sent_ns: int) -> int:
        return sent_ns + self.one_way_delay_ns
