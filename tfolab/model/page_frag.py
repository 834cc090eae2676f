"""Where a sender's bytes sit in memory: the pages tcp_sendmsg copies a write into.

Why the model needs it: below lo's MTU the device cuts a GSO packet into fresh
skbs (skb_segment), each holding one page fragment per page its bytes span,
and the receiver coalesces such skbs into its queue's tail only while that
tail has at most MAX_SKB_FRAGS fragments (skb_try_coalesce). Every skb the
limit starts charges its head's truesize again, so a long unread answer takes
more receive memory, and offers less window, than its payload alone.

Rules (6.1 and 6.18; net/core/sock.c skb_page_frag_refill, net/ipv4/tcp.c
tcp_sendmsg_locked), each copy chunk of a write in turn:
- a chunk ends where its skb is full (size_goal) or the page is;
- before a chunk, a page nobody else holds (page_ref_count 1: every byte
  copied into it before was acknowledged and read) is reused from offset 0;
  else one with fewer than 32 bytes left is replaced by a fresh page;
- pages are SKB_FRAG_PAGE_ORDER 3: 32 KiB on x86-64.
Consecutive chunks on one page are one fragment (skb_can_coalesce), so a
segment has one fragment per page its bytes span.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PAGE_FRAG_BYTES = 32_768  # 4 KiB << SKB_FRAG_PAGE_ORDER
MIN_COPY_ROOM = 32  # tcp_sendmsg_locked: skb_page_frag_refill(32U, ...)
MAX_SKB_FRAGS = 17  # CONFIG_MAX_SKB_FRAGS: 65536 / PAGE_SIZE + 1 on both kernels


@dataclass
class PageFrag:
    """One sender's page frag (current->task_frag) and the sequence numbers where its
    bytes moved to another page."""

    offset: int = PAGE_FRAG_BYTES  # no page yet: the first copy takes a fresh one
    page_starts: list[int] = field(default_factory=list)

    def start_write(self, seq: int, *, idle: bool) -> None:
        """A write begins at `seq`; `idle`: nothing copied before is still held."""
        if idle:
            self.offset = 0
            self.page_starts.append(seq)

    def copy(self, seq: int, end: int) -> None:
        """Copy the bytes [seq, end), which go into one skb, chunk by chunk."""
        while seq < end:
            if PAGE_FRAG_BYTES - self.offset < MIN_COPY_ROOM:
                self.offset = 0
                self.page_starts.append(seq)
            take = min(end - seq, PAGE_FRAG_BYTES - self.offset)
            self.offset += take
            seq += take

    def frags(self, seq: int, end: int) -> int:
        """The page fragments a segment of the bytes [seq, end) holds."""
        return 1 + sum(1 for start in self.page_starts if seq < start < end)

    def forget_below(self, seq: int) -> None:
        """Drop page starts no segment still to be sent can span."""
        self.page_starts = [start for start in self.page_starts if start > seq]
