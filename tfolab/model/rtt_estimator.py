"""The kernel's smoothed round trip and retransmission timeout, in microseconds.

Rules (tcp_input.c tcp_rtt_estimator and __tcp_set_rto; Linux 6.1 and 6.18 alike):
- The first sample m sets srtt = m (kept eight times over, srtt_us), mdev = 2m,
  rttvar = max(mdev, rto_min) and mdev_max = rttvar: the RTO is m + max(2m, 200 ms).
- A later sample moves srtt by an eighth of its error and mdev by a quarter of
  the error beyond mdev / 4; where the RTT fell, that step is cut to an eighth
  (the finer, Eifel-like gain). mdev_max, then rttvar, follow mdev up at once.
- Once per round trip (the sampling ACK moved snd_una past rtt_seq, snd_nxt at
  the round's start) rttvar comes down a quarter of the way to the round's
  mdev_max, and mdev_max starts again from rto_min: rttvar never goes below
  rto_min, so the RTO never below srtt + 200 ms.
- srtt_us is at least 1; the RTO is srtt + rttvar, rounded up to jiffies by
  the caller (usecs_to_jiffies).
The estimate is a value: a sample gives a new one, so a caller may replay the
same samples shifted by the host's microseconds to see both ends of a timer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

RTO_MIN_US = 200_000  # TCP_RTO_MIN (tcp_rto_min_us: no route or BPF override in the lab)


@dataclass(frozen=True, slots=True)
class RttSample:
    """One sample as tcp_rtt_estimator took it: microseconds, and whether its ACK
    ended the round that rtt_seq marks (the first sample starts the first round)."""

    rtt_us: int
    ends_round: bool


@dataclass(frozen=True, slots=True)
class RttEstimate:
    srtt_x8: int  # tp->srtt_us: eight times the smoothed RTT
    mdev: int  # tp->mdev_us
    mdev_max: int  # tp->mdev_max_us
    rttvar: int  # tp->rttvar_us

    @property
    def srtt_us(self) -> int:
        return self.srtt_x8 >> 3

    @property
    def rto_us(self) -> int:
        """__tcp_set_rto, before usecs_to_jiffies."""
        return self.srtt_us + self.rttvar


def first(rtt_us: int, rto_min_us: int = RTO_MIN_US) -> RttEstimate:
    """tcp_rtt_estimator with no previous measure."""
    mdev = rtt_us << 1
    rttvar = max(mdev, rto_min_us)
    return RttEstimate(max(1, rtt_us << 3), mdev, rttvar, rttvar)


def update(estimate: RttEstimate, sample: RttSample, rto_min_us: int = RTO_MIN_US) -> RttEstimate:
    """tcp_rtt_estimator with a previous measure."""
    error = sample.rtt_us - (estimate.srtt_x8 >> 3)
    srtt_x8 = estimate.srtt_x8 + error
    if error < 0:
        step = -error - (estimate.mdev >> 2)
        if step > 0:
            step >>= 3
    else:
        step = error - (estimate.mdev >> 2)
    mdev = estimate.mdev + step
    mdev_max, rttvar = estimate.mdev_max, estimate.rttvar
    if mdev > mdev_max:
        mdev_max = mdev
        rttvar = max(rttvar, mdev_max)
    if sample.ends_round:
        if mdev_max < rttvar:
            rttvar -= (rttvar - mdev_max) >> 2
        mdev_max = rto_min_us
    return RttEstimate(max(1, srtt_x8), mdev, mdev_max, rttvar)


def estimate(samples: Iterable[RttSample], shift_us: int = 0) -> RttEstimate | None:
    """The estimate after `samples`, each `shift_us` longer (None: no sample yet)."""
    result: RttEstimate | None = None
    for sample in samples:
        shifted = RttSample(sample.rtt_us + shift_us, sample.ends_round)
        result = first(shifted.rtt_us) if result is None else update(result, shifted)
    return result
