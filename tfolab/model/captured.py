"""A segment as a capture states it: the kernel's side of the one Timeline vocabulary.

Rules:
- A CapturedRow is what the runner saw on the lab's lo, numbered the way the
  model numbers its segments (each side's ISN 0, connections 1, 2, ... in
  SYN order), so the comparison (tfolab.lab.packets), the captured ladder and
  the JSON contract read it with the model's own types (tfolab.model.options,
  Side); no layer above parses it.
- It crosses the runner's frames as it is (msgspec); `to_json()` is the JSON
  contract's `captured` row, options by their labels (DESIGN.md, "Contracts").
"""

from __future__ import annotations

from typing import Literal

import msgspec

from tfolab.model.events import Side
from tfolab.model.options import TcpOption, labels


class CapturedRow(msgspec.Struct, frozen=True):
    """One TCP segment the kernel put on lo, in the JSON contract's `captured` shape.

    t_ms: arrival (after the delay), from the scenario's first measured call;
    seq/ack relative per connection and direction, numbered as the model does.
    """

    t_ms: float
    connection: int
    sender: Side
    flags: list[str]
    seq: int
    ack: int | None
    length: int
    options: list[TcpOption]  # typed as the model's (tfolab.model.options), in wire order
    window: int  # the header's window field, as on the wire (unscaled)
    # the path lost it (the `drop` setting): t_ms is when its delay ended, not an arrival
    lost: bool = False
    # how late the delay backend released it after its due time (sent + D), as the
    # backend measured it: the backend's own error, not TCP's; 0 where not measured
    late_ms: float = 0.0

    def to_json(self) -> dict[str, object]:
        """The JSON contract's `captured` row: options by their labels."""
        data = msgspec.to_builtins(self)
        data["options"] = labels(self.options)
        if not self.lost:
            del data["lost"]  # only a lost row says so
        if not self.late_ms:
            del data["late_ms"]  # only a measured lateness is written
        return data  # type: ignore[no-any-return]


CallName = Literal["read", "write", "close"]


class CapturedCall(msgspec.Struct, frozen=True):
    """One call an application of the lab made, as the application stamped it: the
    client's samples (tfolab.core.native.Sample) and the echo server's call stamps
    (struct tfl_call_stamp), on the capture's clock.

    t_ms: when the call was made (read: the client's when it returned; the server's
    when it was made), from the scenario's first measured call; connection: numbered as
    the captured rows are.
    """

    t_ms: float
    connection: int
    side: Side
    call: CallName

    def to_json(self) -> dict[str, object]:
        """The JSON contract's `calls` row."""
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]
