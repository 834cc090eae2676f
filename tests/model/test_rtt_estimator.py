"""The kernel's RTT estimator (rtt_estimator.py), figures worked from tcp_rtt_estimator
and __tcp_set_rto (tcp_input.c, Linux 6.1 and 6.18 read alike)."""

from __future__ import annotations

from tfolab.model.rtt_estimator import RttSample, estimate, first, update


def test_the_first_sample_sets_the_rto_to_m_plus_max_2m_200ms() -> None:
    short = first(26_000)
    assert (short.srtt_us, short.mdev, short.rttvar, short.rto_us) == (
        26_000,
        52_000,
        200_000,
        226_000,
    )
    long = first(150_000)
    assert (long.rttvar, long.mdev_max, long.rto_us) == (300_000, 300_000, 450_000)  # 3m


def test_steady_samples_keep_rttvar_at_rto_min_on_a_short_path() -> None:
    after = update(first(26_000), RttSample(26_000, ends_round=True))
    assert (after.srtt_us, after.mdev, after.mdev_max, after.rttvar) == (
        26_000,
        39_000,
        200_000,
        200_000,
    )
    assert after.rto_us == 226_000


def test_on_a_long_path_rttvar_decays_a_quarter_per_round_not_per_sample() -> None:
    """m = 150 ms three times. The RFC 6298 form would give rttvar 4 x 56.25 ms after the
    second sample (RTO 375 ms); the kernel keeps 300 ms until a round ends with mdev_max
    below it, then comes down a quarter of the way to rto_min."""
    two = estimate([RttSample(150_000, False), RttSample(150_000, True)])
    assert two is not None and (two.mdev, two.rttvar, two.rto_us) == (225_000, 300_000, 450_000)
    assert two.mdev_max == 200_000  # the round ended: it starts again from rto_min
    three = update(two, RttSample(150_000, ends_round=True))
    assert (three.mdev, three.rttvar, three.rto_us) == (168_750, 275_000, 425_000)
    within_round = update(two, RttSample(150_000, ends_round=False))
    assert within_round.rttvar == 300_000


def test_a_falling_rtt_moves_mdev_by_the_finer_gain() -> None:
    """100 ms, then 20 ms: the error's excess over mdev / 4 (30 ms) counts an eighth."""
    after = update(first(100_000), RttSample(20_000, ends_round=False))
    assert (after.srtt_us, after.mdev, after.mdev_max, after.rttvar) == (
        90_000,
        203_750,
        203_750,
        203_750,
    )
    assert after.rto_us == 293_750


def test_a_shift_replays_every_sample_longer() -> None:
    samples = [RttSample(26_000, False), RttSample(26_000, True)]
    shifted = estimate(samples, 400)
    assert shifted is not None and shifted.srtt_us == 26_400
    assert estimate([]) is None
