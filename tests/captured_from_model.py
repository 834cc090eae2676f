"""A capture of exactly what the model says: the model's rows as the runner's CapturedRow.

Tests of the comparison, the captured ladder and the repeats start from it and change one
thing. A model cookie states only its length; here it gets bytes, as a capture shows them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tfolab.lab.packet_rows import Row
from tfolab.model.captured import CapturedRow
from tfolab.model.options import FastOpen, TcpOption

COOKIE_HEX = "0011223344556677"


def with_bytes(option: TcpOption) -> TcpOption:
    """A model cookie (its length) as a capture states it (its bytes)."""
    if isinstance(option, FastOpen) and not option.is_request:
        return FastOpen(option.option_kind, 8, COOKIE_HEX)
    return option


def as_captured(
    rows: Iterable[Row], *, origin_ms: float = 0.0, late_ms: Mapping[int, float] | None = None
) -> list[CapturedRow]:
    """`rows` as captured on a clock starting at `origin_ms` (the model's), each iteration's
    segments `late_ms[iteration]` late."""
    late = late_ms or {}
    return [
        CapturedRow(
            t_ms=r.arrived_ms - origin_ms + late.get(r.iteration, 0.0),
            connection=r.connection,
            sender=r.sender,
            flags=list(r.flags),
            seq=r.seq,
            ack=r.ack,
            length=r.length,
            options=[with_bytes(o) for o in r.options],
            window=r.window if r.window is not None else 0,
            lost=r.lost,
        )
        for r in rows
    ]
