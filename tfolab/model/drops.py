"""The `drop` setting: which packets the lab's path loses, named by their order.

Rules:
- A drop names a sender and the 1-based index N of a packet that sender puts on
  lo within an iteration: "client:1" is the client's first, its SYN. A
  retransmission is a new packet (so "client:1,client:2" loses a SYN and its
  first retransmission). A packet is one segment: the lab's lo has TSO and GSO
  off, so the device cuts every GSO packet into segments before the delayer
  sees them. Only the iteration's own connection counts. "@K" limits a drop to
  iteration K; without it, the drop applies to every iteration.
- The setting is written as a student types it, comma-separated
  ("client:1,client:2@1"); `label` writes it back the same way. Bad text is a
  ValueError whose message says what is wrong and what fits.
- The same typed value drives the model's path (loop.py) and the delayer's plan
  for each iteration (the runner; native/delay/drop.c), so both lose the same
  packet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Sender = Literal["client", "server"]
MAX_DROPS = 64  # the delayer's limit per plan (native/delay/tfo_delay.h MAX_DROPS)
MAX_DROP_INDEX = 1000  # a packet index beyond any lab's iteration
_ENTRY = re.compile(r"(client|server):([0-9]+)(?:@([0-9]+))?")
EXAMPLE = "client:1,client:2 (a SYN and its first retransmission) or server:1@2"


@dataclass(frozen=True, order=True)
class Drop:
    sender: Sender
    index: int  # 1-based, among that sender's packets in the iteration
    iteration: int = 0  # 0: every iteration

    def label(self) -> str:
        at = f"@{self.iteration}" if self.iteration else ""
        return f"{self.sender}:{self.index}{at}"

    def applies_to(self, iteration: int) -> bool:
        return self.iteration in (0, iteration)


def parse_drops(text: str) -> tuple[Drop, ...]:
    """The drops a `drop` setting names, in order; "" or "none" names none."""
    text = text.strip()
    if text in ("", "none"):
        return ()
    drops: list[Drop] = []
    for entry in text.split(","):
        match = _ENTRY.fullmatch(entry.strip())
        if match is None:
            raise ValueError(
                f"{entry.strip()!r} is not SENDER:N or SENDER:N@K (SENDER client or server, "
                f"N the packet's number in its iteration from 1): e.g. {EXAMPLE}"
            )
        sender, index, iteration = match.group(1), int(match.group(2)), int(match.group(3) or 0)
        if not 1 <= index <= MAX_DROP_INDEX:
            raise ValueError(f"{entry.strip()!r}: N must be 1 to {MAX_DROP_INDEX}")
        if match.group(3) is not None and iteration < 1:
            raise ValueError(f"{entry.strip()!r}: K counts iterations from 1")
        drop = Drop("client" if sender == "client" else "server", index, iteration)
        if any(_overlap(d, drop) for d in drops):
            raise ValueError(f"{entry.strip()!r} names a packet already dropped")
        drops.append(drop)
    if len(drops) > MAX_DROPS:
        raise ValueError(f"at most {MAX_DROPS} drops, got {len(drops)}")
    return tuple(drops)


def _overlap(one: Drop, other: Drop) -> bool:
    """Do two drops name the same packet in some iteration?"""
    same_packet = (one.sender, one.index) == (other.sender, other.index)
    return same_packet and (
        0 in (one.iteration, other.iteration) or one.iteration == other.iteration
    )


def label(drops: tuple[Drop, ...]) -> str:
    """The setting as typed: "client:1,client:2@1", or "none"."""
    return ",".join(drop.label() for drop in drops) or "none"
