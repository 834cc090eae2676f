"""The lab's path as the model sees it: every segment arrives D later, unless a drop names it.

Rules:
- Each sender's segments are numbered per connection from 1 as they leave,
  retransmissions included: the delayer numbers the packets of the iteration's
  connection the same way (native/delay/drop.c), one per segment on the lab's
  lo (TSO and GSO off there: the device cuts GSO packets first).
- A measured iteration's connection loses the segments its drops name
  (tfolab.model.drops); the warm-up connection (iteration 0) loses nothing,
  as the runner sends no plan before it.
- A middlebox (the `middlebox` setting) judges every segment of every
  connection by what it carries (middlebox_verdict); a segment it drops is
  lost like a dropped one, and counts in the order all the same.
- What follows a loss is the endpoints' business (their timers); the path
  only says whether a segment arrives. A loss the endpoints have no rule for
  ends the run at once (LossNotFollowed), its reason said.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from tfolab.model.drops import Drop
from tfolab.model.events import Side
from tfolab.model.scenario import Middlebox


class LossNotFollowed(RuntimeError):
    """The path lost a segment whose consequences the model does not follow yet."""


Verdict = Literal["pass", "lose", "strip"]


@dataclass
class Path:
    drops: tuple[Drop, ...] = ()
    middlebox: Middlebox = "none"
    _sent: dict[tuple[int, Side], int] = field(default_factory=dict)

    def middlebox_verdict(self, flags: tuple[str, ...], payload: int, fast_open: bool) -> Verdict:
        """What the middlebox does to a segment: every connection's, warm-up's included.
        drop-syn-data loses a SYN (no ACK) carrying data; drop-tfo-syn a SYN (no ACK)
        with a Fast Open option (34, or 254 with its magic); strip-tfo-option takes
        that option out of SYNs and SYN-ACKs (the rest passes as sent)."""
        syn_only = "SYN" in flags and "ACK" not in flags
        if self.middlebox == "drop-syn-data" and syn_only and payload:
            return "lose"
        if self.middlebox == "drop-tfo-syn" and syn_only and fast_open:
            return "lose"
        if self.middlebox == "strip-tfo-option" and "SYN" in flags and fast_open:
            return "strip"
        return "pass"

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
