"""A segment whose PSH is a named race (Segment.psh_race: where GSO packets end when the
host's round-trip excess decides tcp_tso_autosize) matches the kernel's either way, and
each one the kernel took the other way is counted as a race used."""

from __future__ import annotations

import dataclasses

from tfolab.lab import packets
from tfolab.lab.packet_rows import Row
from tfolab.model.options import Timestamps

SEGMENT = Row(1, "server", ("ACK", "PSH"), 2897, 17, 1448, (Timestamps(),), 40.0, window=64)


def test_a_psh_race_matches_either_flag() -> None:
    racing = dataclasses.replace(SEGMENT, psh_either=True)
    without = dataclasses.replace(SEGMENT, flags=("ACK",))
    assert racing.stands_for(without) and racing.stands_for(SEGMENT)
    assert not SEGMENT.stands_for(without)
    assert not racing.stands_for(dataclasses.replace(without, seq=4345))


def test_each_flag_the_kernel_took_the_other_way_counts() -> None:
    racing = dataclasses.replace(SEGMENT, psh_either=True, event_id=7)
    kernel = dataclasses.replace(SEGMENT, flags=("ACK",), captured_index=0)
    aligned = packets.pairs([racing], [kernel], {0: 0.0}, {0: 0.0}, same_instant=False)
    assert all(p.disagreement is None for p in aligned)
    assert packets.race_count(aligned, [racing]) == (1, 1)
    same = dataclasses.replace(kernel, flags=("ACK", "PSH"))
    aligned = packets.pairs([racing], [same], {0: 0.0}, {0: 0.0}, same_instant=False)
    assert packets.race_count(aligned, [racing]) == (1, 0)
