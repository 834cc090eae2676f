"""packets._direction pairs the common start without the table: the same alignment as the
table alone gives, on seeded random sequences with optional rows, PSH races and changes."""

from __future__ import annotations

import dataclasses
import random

from tfolab.lab import packets
from tfolab.lab.packet_rows import Row
from tfolab.model.options import Timestamps

BASE = Row(1, "server", ("ACK",), 1, 17, 100, (Timestamps(),), 0.0, window=64, band_ms=1e9)


def _rows(rng: random.Random) -> tuple[list[Row], list[Row]]:
    model: list[Row] = []
    kernel: list[Row] = []
    for k in range(rng.randint(0, 14)):
        row = dataclasses.replace(BASE, seq=1 + 100 * k, arrived_ms=float(k), event_id=k)
        how = rng.random()
        if how < 0.15:  # an optional model row the kernel may or may not send
            model.append(dataclasses.replace(row, optional=True))
            if rng.random() < 0.5:
                kernel.append(dataclasses.replace(row, captured_index=k))
            continue
        if how < 0.3:  # a PSH race, the kernel either way
            model.append(dataclasses.replace(row, psh_either=True))
            flags = ("ACK", "PSH") if rng.random() < 0.5 else ("ACK",)
            kernel.append(dataclasses.replace(row, flags=flags, captured_index=k))
            continue
        if how < 0.4:  # changed, missing or extra
            model.append(row)
            choice = rng.choice(("changed", "missing", "extra"))
            if choice == "changed":
                kernel.append(dataclasses.replace(row, length=99, captured_index=k))
            elif choice == "extra":
                kernel.append(dataclasses.replace(row, captured_index=k))
                kernel.append(dataclasses.replace(row, seq=row.seq + 50, captured_index=100 + k))
            continue
        model.append(row)
        kernel.append(dataclasses.replace(row, captured_index=k))
    return model, kernel


def _shape(pairs: list[packets.Pair]) -> list[tuple[object, object, object]]:
    return [
        (
            p.model.event_id if p.model else None,
            p.kernel.captured_index if p.kernel else None,
            type(p.disagreement).__name__ if p.disagreement else None,
        )
        for p in pairs
    ]


def test_pairing_the_common_start_first_changes_no_alignment() -> None:
    rng = random.Random(20261128)
    clocks = packets._Clocks({0: 0.0}, {0: 0.0})
    for _ in range(400):
        model, kernel = _rows(rng)
        fast = packets._direction(model, kernel, clocks)
        table = packets._table(model, kernel, clocks)
        assert _shape(fast) == _shape(table), (model, kernel)


def test_an_optional_row_is_no_part_of_the_common_start() -> None:
    """A race's optional ACK the same as the next segment: pairing it first would leave
    that segment missing; the table leaves the optional row out instead."""
    clocks = packets._Clocks({0: 0.0}, {0: 0.0})
    optional = dataclasses.replace(BASE, optional=True, event_id=1)
    model = [optional, dataclasses.replace(BASE, event_id=2)]
    kernel = [dataclasses.replace(BASE, captured_index=0)]
    assert _shape(packets._direction(model, kernel, clocks)) == [(1, None, None), (2, 0, None)]
