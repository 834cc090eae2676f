"""Where a sender's bytes sit in memory: the pages tcp_sendmsg copies a write into.

Why the model needs it: below lo's MTU the device cuts a GSO packet into fresh
skbs (skb_segment), each holding one page fragment per page its bytes span,
and the receiver coalesces such skbs into its queue's tail only while that
tail has at most MAX_SKB_FRAGS fragments (skb_try_coalesce). Every skb the
limit starts charges its head's truesize again, so a long unread answer takes
more receive memory, and offers less window, than its payload alone.

Rules (6.1 and 6.18; net/core/sock.c skb_page_frag_refill, net/ipv4/tcp.c
tcp_sendmsg_locked), each copy chunk of a write in turn:
- the page frag is the process's, not the socket's: sk_page_frag() gives
  &current->task_frag to a socket allocating with GFP_KERNEL, so all the
  sockets one task writes to share one page and one offset (TaskFrag). The
  echo server is one process; the client is the runner's own thread (the
  native client through ctypes). Both met the runner's unmeasured warm-up
  exchange first (runner/scenario_run.py), which the model does not simulate:
  `after_warm_up` puts each side where that exchange left it;
- a chunk ends where its skb is full (size_goal) or the page is;
- before a chunk, a page nobody else holds (page_ref_count 1) is reused from
  offset 0; else one with fewer than 32 bytes left is replaced by a fresh page;
- pages are SKB_FRAG_PAGE_ORDER 3: 32 KiB on x86-64.
Consecutive chunks on one page are one fragment (skb_can_coalesce), so a
segment has one fragment per page its bytes span.

Whether the page is free at a write is a race (5.19+, skb_attempt_defer_free:
6.1 and 6.18 alike). The model's outcome: at a write where every byte this
socket copied before was acknowledged and read (output._pages_idle), or the
socket's first write (what the task's earlier connections left was read
before this one began), the page is free and reused from 0. The other: a read
skb is freed only on the CPU that allocated it (skb->alloc_cpu: the one that
cut the GSO packet, or the sender's for a clone); read on the other CPU,
tcp_eat_recv_skb puts it, with its page references, on that CPU's defer
list, freed at that CPU's next NET_RX softirq (skb_defer_free_flush) or once
the list holds skb_defer_max / 2 (an IPI). So the
page may still be held, and the write goes on at the offset where the task's
last copy stopped ("held", where that leaves MIN_COPY_ROOM). Each write
follows the other outcome alongside (`other`), and it is a race only where
some segment of it would hold another number of fragments (`differs`):
otherwise nothing on the wire or in a window can tell them apart. Measured in
CI's VM (6.1, netem, 2 CPUs): a 269,765 B answer at MTU 9000 started at the
warm-up answer's end (7621) in 2 runs of 4, the windows at two ACKs 5 units
(one skb head) off the model's (TCP-NOTES, "The receiver's memory, per fragment").
"""

from __future__ import annotations

from dataclasses import dataclass, field

PAGE_FRAG_BYTES = 32_768  # 4 KiB << SKB_FRAG_PAGE_ORDER
MIN_COPY_ROOM = 32  # tcp_sendmsg_locked: skb_page_frag_refill(32U, ...)
MAX_SKB_FRAGS = 17  # CONFIG_MAX_SKB_FRAGS: 65536 / PAGE_SIZE + 1 on both kernels
# the runner's warm-up exchange (runner/scenario_run._warm_up_options): the native
# client's default request line, answered by the scenario's server
WARM_UP_REQUEST_BYTES = 16
# A write whose page may still be held: (connection, side, the write's first byte's
# sequence number); the same write keeps its name whatever other races went otherwise.
PageWrite = tuple[int, str, int]


@dataclass
class TaskFrag:
    """One process's page frag (current->task_frag): where its last copy stopped."""

    offset: int = PAGE_FRAG_BYTES  # no page yet: the first copy takes a fresh one


def after_warm_up(answer_bytes: int) -> TaskFrag:
    """A task frag as the runner's warm-up exchange leaves it: `answer_bytes` copied from
    offset 0 of a fresh page, as one run (an skb end that left fewer than MIN_COPY_ROOM
    bytes on a page would move it; the model cannot know that exchange's skbs)."""
    task = TaskFrag()
    PageFrag(task).copy(1, 1 + answer_bytes)
    return task


@dataclass
class OtherOutcome:
    """The outcome of a write's page race this timeline did not take, followed alongside:
    the write's start, where the copy would stand, and the page starts it would make."""

    start: int
    offset: int
    page_starts: list[int] = field(default_factory=list)


@dataclass
class PageFrag:
    """One socket's view of its task's page frag: the sequence numbers where its bytes
    moved to another page, and the other outcome of its latest write's page race."""

    task: TaskFrag = field(default_factory=TaskFrag)
    page_starts: list[int] = field(default_factory=list)
    written: bool = False  # has this socket copied anything yet
    other: OtherOutcome | None = None

    @property
    def offset(self) -> int:
        return self.task.offset

    def start_write(self, seq: int, *, idle: bool, held: bool = False) -> bool:
        """A write begins at `seq`. `idle`: nothing this socket copied before is still
        held, so the page is reused from 0 unless `held` (the race's other outcome: a
        read skb still holds it, and the write goes on at the task's offset). True where
        it went on there."""
        reusable = idle or not self.written
        self.written = True
        if not reusable:
            return False  # this socket's own bytes hold the page: both outcomes alike
        task = self.task
        room = 0 < task.offset <= PAGE_FRAG_BYTES - MIN_COPY_ROOM
        if held and room:
            self.other = OtherOutcome(seq, 0, [seq])
            return True
        self.other = OtherOutcome(seq, task.offset) if room else None
        task.offset = 0
        self.page_starts.append(seq)
        return False

    def copy(self, seq: int, end: int) -> None:
        """Copy the bytes [seq, end), which go into one skb, chunk by chunk."""
        self.task.offset = _copy(self.task.offset, seq, end, self.page_starts)
        if self.other is not None:
            self.other.offset = _copy(self.other.offset, seq, end, self.other.page_starts)

    def frags(self, seq: int, end: int) -> int:
        """The page fragments a segment of the bytes [seq, end) holds."""
        return _frags(self.page_starts, seq, end)

    def differs(self, seq: int, end: int) -> bool:
        """Would the segment [seq, end) hold another number of fragments had the latest
        page race gone the other way?"""
        other = self.other
        if other is None or end <= other.start:
            return False
        before = [start for start in self.page_starts if start < other.start]
        return self.frags(seq, end) != _frags(before + other.page_starts, seq, end)

    def forget_below(self, seq: int) -> None:
        """Drop page starts no segment still to be sent can span."""
        self.page_starts = [start for start in self.page_starts if start > seq]
        if self.other is not None:
            self.other.page_starts = [start for start in self.other.page_starts if start > seq]


def _copy(offset: int, seq: int, end: int, page_starts: list[int]) -> int:
    """skb_page_frag_refill and the copy, chunk by chunk, from `offset`: the offset after
    it; the sequence numbers where a fresh page began are added to `page_starts`."""
    while seq < end:
        if PAGE_FRAG_BYTES - offset < MIN_COPY_ROOM:
            offset = 0
            page_starts.append(seq)
        take = min(end - seq, PAGE_FRAG_BYTES - offset)
        offset += take
        seq += take
    return offset


def _frags(page_starts: list[int], seq: int, end: int) -> int:
    return 1 + sum(1 for start in page_starts if seq < start < end)
