"""The lab's path as the model sees it: every segment arrives D later, unless a drop names it.

Rules:
- Each sender's segments are numbered per connection from 1 as they leave,
  retransmissions included: the delayer numbers the packets of the iteration's
  connection the same way (native/delay/drop.c), one per segment on the lab's
  lo (TSO and GSO off there: the device cuts GSO packets first).
- A measured iteration's connection loses the segments its drops name
  (tfolab.model.drops); the warm-up connection (iteration 0) loses nothing,
  as the runner sends no plan before it.
- What follows a loss is the endpoints' business (their timers); the path
  only says whether a segment arrives. A loss the endpoints have no rule for
  ends the run at once (LossNotFollowed), its reason said.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tfolab.model.drops import Drop
from tfolab.model.events import Side


class LossNotFollowed(RuntimeError):
    """The path lost a segment whose consequences the model does not follow yet."""


@dataclass
class Path:
    drops: tuple[Drop, ...] = ()
    _sent: dict[tuple[int, Side], int] = field(default_factory=dict)

    def loses(self, iteration: int, connection: int, sender: Side) -> bool:
        """Count a segment `sender` puts on the link; True if the path loses it."""
        key = (connection, sender)
        number = self._sent.get(key, 0) + 1
        self._sent[key] = number
        if iteration < 1:
            return False
        return any(
            drop.sender == sender and drop.index == number and drop.applies_to(iteration)
            for drop in self.drops
        )
