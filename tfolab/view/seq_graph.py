"""The time-sequence graph (Stevens', tcptrace's) of one direction of one connection, as data.

Rules:
- Built from the comparison's rows (lab.packet_rows), the model's or the
  capture's, which number connections alike: 1, 2, ... in the order their
  SYNs arrived. The model's rows that state no segment of their own (a race's
  other outcome) are left out.
- One direction: each segment `sender` puts on the wire is a bar from its
  first sequence number to its end (a SYN or a FIN takes one), at its
  arrival; the peer's acknowledgment numbers, and the right edge of the
  window it advertised (ack + the window field shifted by the peer's window
  scale; a SYN's field is never scaled), are step lines.
- Times are from the connection's first segment, on that side's own clock:
  the model's graph and the kernel's share an origin whatever the host did
  between connections. Sequence numbers are relative (each ISN is 0).
- The geometry both pictures share (the axes' `limits`, `ticks`, a step line's
  corners) is here, so the SVG needs no plotext.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tfolab.lab.packet_rows import Row
from tfolab.model.events import Side
from tfolab.model.options import WindowScale

Source = Literal["model", "kernel"]


@dataclass(frozen=True)
class Bar:
    """One segment: sent data (or a SYN or FIN) from `start` to `end`, arriving at `t_ms`."""

    t_ms: float
    start: int
    end: int
    flags: tuple[str, ...]

    @property
    def payload(self) -> int:
        return self.end - self.start - ("SYN" in self.flags) - ("FIN" in self.flags)


@dataclass(frozen=True)
class Step:
    """A value of a step line from `t_ms` on: an ACK number, or a window's right edge."""

    t_ms: float
    value: int


@dataclass(frozen=True)
class SeqGraph:
    source: Source
    connection: int
    sender: Side  # whose data the bars are
    bars: tuple[Bar, ...]
    acks: tuple[Step, ...]  # the peer's acknowledgment numbers
    window_edges: tuple[Step, ...]  # ack + the peer's advertised window, in bytes

    @property
    def payload_bytes(self) -> int:
        return sum(bar.payload for bar in self.bars)

    @property
    def last_ms(self) -> float:
        times = [b.t_ms for b in self.bars] + [s.t_ms for s in self.acks]
        return max(times, default=0.0)

    @property
    def data_top(self) -> int:
        """The highest byte sent or acknowledged."""
        return max([b.end for b in self.bars] + [s.value for s in self.acks], default=0)

    @property
    def highest(self) -> int:
        values = [b.end for b in self.bars] + [s.value for s in self.window_edges]
        return max(values, default=0)

    def title(self) -> str:
        return (
            f"{self.source}: connection {self.connection}, the {self.sender}'s data "
            f"({len(self.bars)} segments, {self.payload_bytes:,} bytes)"
        )


def seq_graph(rows: Sequence[Row], connection: int, sender: Side, source: Source) -> SeqGraph:
    """The graph of `sender`'s data on `connection` from one side's rows."""
    own = [r for r in rows if r.connection == connection and _states_a_segment(r, source)]
    if not own:
        return SeqGraph(source, connection, sender, (), (), ())
    origin = min(r.arrived_ms for r in own)
    peer_shift = _peer_shift(own, sender)
    bars: list[Bar] = []
    acks: list[Step] = []
    edges: list[Step] = []
    for row in sorted(own, key=lambda r: r.arrived_ms):
        t = row.arrived_ms - origin
        if row.sender == sender:
            taken = row.length + ("SYN" in row.flags) + ("FIN" in row.flags)
            if taken:
                bars.append(Bar(t, row.seq, row.seq + taken, row.flags))
        elif row.ack is not None:
            acks.append(Step(t, row.ack))
            if row.window is not None:
                shift = 0 if "SYN" in row.flags else peer_shift
                edges.append(Step(t, row.ack + (row.window << shift)))
    return SeqGraph(source, connection, sender, tuple(bars), tuple(acks), tuple(edges))


def busiest_direction(rows: Sequence[Row]) -> tuple[int, Side] | None:
    """The (connection, sender) that carried the most payload: the graph worth drawing
    first (ties: the earlier connection, then the server's answer)."""
    carried: dict[tuple[int, Side], int] = {}
    for row in rows:
        if row.length:
            key = (row.connection, row.sender)
            carried[key] = carried.get(key, 0) + row.length
    if not carried:
        return None
    return min(carried, key=lambda k: (-carried[k], k[0], k[1] != "server"))


def _states_a_segment(row: Row, source: Source) -> bool:
    return source == "kernel" or row.event_id is not None


def _peer_shift(rows: Sequence[Row], sender: Side) -> int:
    """The peer's window scale: its SYN's shift where both SYNs carried the option
    (tcp_parse_options; RFC 7323: else neither side scales)."""
    shifts: dict[Side, int] = {}
    for row in rows:
        if "SYN" in row.flags:
            scale = next((o for o in row.options if isinstance(o, WindowScale)), None)
            if scale is not None:
                shifts[row.sender] = scale.shift
    peer: Side = "server" if sender == "client" else "client"
    return shifts[peer] if len(shifts) == 2 else 0


@dataclass(frozen=True)
class GraphRow:
    """What a scenario draws: a heading, the model's graph, and the kernel's (None: the
    model alone, as `simulate` has it)."""

    heading: str
    model: SeqGraph
    kernel: SeqGraph | None


def step_points(steps: Sequence[Step], until_ms: float) -> tuple[list[float], list[float]]:
    """A step line's corners: each value holds until the next one, the last until `until_ms`."""
    xs: list[float] = []
    ys: list[float] = []
    for step, after in zip(steps, [*steps[1:], None], strict=True):
        end = after.t_ms if after is not None else max(until_ms, step.t_ms)
        xs += [step.t_ms, end]
        ys += [float(step.value), float(step.value)]
    return xs, ys


WINDOW_IN_VIEW = 3  # the window's edge is drawn in range while within 3x the data's top


def limits(graphs: Sequence[SeqGraph]) -> tuple[float, float]:
    """The shared x and y ranges: the latest time, and the data's top (the highest byte
    sent or acknowledged), or the window's edge where that is not far above it (else
    the edge leaves the picture: a window far larger than the data)."""
    last = max((g.last_ms for g in graphs), default=0.0)
    data_top = max((g.data_top for g in graphs), default=0)
    edge = max((g.highest for g in graphs), default=0)
    top = edge if edge <= WINDOW_IN_VIEW * data_top else data_top
    return max(last, 1e-3) * 1.05, max(top, 1) * 1.05


def ticks(limit: float, count: int = 5) -> list[float]:
    return [limit * k / count for k in range(count + 1)]
