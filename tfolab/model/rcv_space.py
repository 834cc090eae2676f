"""The receive window a socket would advertise now, from the memory its queue holds.

Why the model needs it: __tcp_ack_snd_check ACKs "more than one full frame"
at once only if the window's right edge would not move left, i.e. only if
__tcp_select_window() >= the window last advertised (tp->rcv_wnd). Whether it
does depends on how much receive memory the unread segments take, and on how
the kernel converts memory into window. Kernels differ there:

- before 6.6, tcp_win_from_space() is space - space >> tcp_adv_win_scale (1):
  half the free memory. With Linux's default tcp_rmem[1] (128 KiB), two
  unread 1448-byte segments already pull the window below the one advertised,
  so the ACK waits (for the read, __tcp_cleanup_rbuf, or the timer);
- from 6.6 (scaling_ratio), the window is free memory times the measured
  payload/truesize ratio (tcp_measure_rcv_mss); on loopback that ratio is
  above one half, the window stays ahead, and the ACK leaves at once.

Rules, each after the kernel function it names (times do not matter here):
- `initial_window` (tcp_select_initial_window): the SYN's window is the full
  space rounded down to the MSS, at most 65535; rcv_ssthresh starts there.
- `init_buffer_space` (tcp_init_buffer_space): window_clamp = the full space,
  less one MSS kept in reserve; rcv_ssthresh no larger than the clamp.
- `queue` (tcp_queue_rcv, tcp_try_coalesce, tcp_measure_rcv_mss,
  tcp_grow_window): a segment charges its truesize (payload + the skb head
  the sender allocated); a segment joining an unread tail skb is coalesced and
  charges its payload only (nothing where the payload fits the tail's
  linear tailroom: skb_try_coalesce copies it there, delta_truesize 0, as
  after a 1420-byte SYN data head before 6.5, 2036 bytes of room), but only
  when that tail is a fresh skb:
  skb_try_coalesce refuses a cloned `to` (6.1 and 6.18), and on loopback the
  receiver queues the sender's own clone unless the skb was cut in software
  (skb_segment, a GSO packet of several segments with GSO off below lo's
  MTU). So a single-segment packet, and every packet at lo's MTU, starts a
  tail nothing coalesces into, until the sender frees its copy: once the
  ACK covering it is processed there (tcp_clean_rtx_queue), the clone is
  the data's only user and coalescing works (`release_tail`).
  A tail takes at most MAX_SKB_FRAGS page fragments (skb_try_coalesce): a
  segment whose fragments (page_frag.py) do not fit starts a new skb, which
  charges its head again.
  After it, the ratio may be re-measured (scaling era) and rcv_ssthresh
  grows by up to two MSS while memory allows; a growth grants one quick ACK
  (icsk_ack.quick |= 1). tcp_grow_window judges the sender's clone by its
  page frags alone (truesize_adjust: no linear payload), so a clone always
  passes check #2 and grows by 2 x advmss: above an advmss of half the
  full space (MTU > ~32.8 kB) one 298-byte request opens the window from
  43336 to the whole 65536 (6.18, MTU 43388: window 43 -> 64); a fresh skb
  is judged by payload plus head and may grow by 2 x rcv_mss only.
- `read_all` (tcp_recvmsg): the application's read frees the memory;
  `window_raised` (__tcp_cleanup_rbuf, 6.1 and 6.18): if the window the peer
  may still use is at most half the clamp and the read lets the socket offer
  at least twice that, an ACK goes at once to say so (a window update).
- `select_window` (__tcp_select_window) and `advertise` (tcp_select_window:
  the window never shrinks below what the peer may still send).

- The SYN's data (`syn_data_truesize`): before 6.5 tcp_send_syn_data copies it
  into the skb's head, so it charges that kmalloc'd head (`linear_truesize`,
  4352 bytes for 1420), as a Fast Open child's queue (tcp_fastopen_add_skb
  keeps the received clone) and when the client resends that skb alone; from
  6.5 it is a page frag like any other payload.

Truesize is an estimate of the kernel's accounting: payload plus the skb's
head, sk_buff and shared info, 1280 bytes before 6.3 (a 1 KiB kmalloc head)
and 896 after (the 640-byte skb_small_head_cache), good to a few hundred
bytes; the decisions the labs exercise are hundreds to thousands of bytes
from the edge.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfolab.model.page_frag import MAX_SKB_FRAGS

TCP_RMEM_TO_WIN_SCALE = 8
DEFAULT_RMEM = 131_072  # Linux's default net.ipv4.tcp_rmem[1]
DEFAULT_SCALING_RATIO = 1 << (TCP_RMEM_TO_WIN_SCALE - 1)  # TCP_DEFAULT_SCALING_RATIO: 50 %
TS_OPTION_BYTES = 12
U16_MAX = 65535


@dataclass(frozen=True)
class ReceiveMemory:
    """What one kernel does with receive memory: its defaults and its conversion."""

    rmem_default: int = DEFAULT_RMEM  # tcp_rmem[1]: every socket's first sk_rcvbuf
    rmem_max: int = 6_291_456  # tcp_rmem[2]
    scaling_ratio: bool = True  # 6.6+: window = memory x measured ratio; before: half
    skb_head_truesize: int = 896  # the truesize of a data skb besides its payload
    # before 6.5 tcp_send_syn_data copies the SYN's data into the skb's head (a
    # kmalloc'd linear area): its truesize is that allocation's (`syn_data_truesize`)
    syn_data_linear: bool = False
    # 6.7+: an ACK due while the socket's backlog is processed is deferred to
    # tcp_release_cb (TCP_ACK_DEFERRED, sysctl tcp_backlog_ack_defer), one for the batch
    backlog_ack_defer: bool = True
    # 6.10+: tcp_write_xmit grows the head skb from the next one up to the congestion
    # window's quota (tcp_grow_skb), so GSO packets cross the skbs sendmsg made
    grow_skb: bool = True
    # Not receive memory, but this kernel generation's too: from 6.5 the first
    # tcp_syn_linear_timeouts (a namespace sysctl, 4 by default) SYN retransmissions
    # keep TCP_TIMEOUT_INIT before the timeout doubles (syn_timer.py); 0 before 6.5
    syn_linear_timeouts: int = 4
    # 5.19+: a read skb is freed on the CPU that allocated it (skb_attempt_defer_free),
    # so the sender's page may still be held at its next write (page_frag.py)
    defer_free: bool = True

    def describe(self) -> str:
        way = "scaling_ratio" if self.scaling_ratio else "tcp_adv_win_scale 1"
        return f"tcp_rmem[1] {self.rmem_default}, window from memory by {way}"


def receive_memory_for(release: tuple[int, int], rmem_default: int, rmem_max: int) -> ReceiveMemory:
    """The kernel generation's receive-memory rules, from its version (major, minor)."""
    return ReceiveMemory(
        rmem_default=rmem_default,
        rmem_max=rmem_max,
        scaling_ratio=release >= (6, 6),  # "tcp: get rid of sysctl_tcp_adv_win_scale"
        skb_head_truesize=896 if release >= (6, 3) else 1280,  # skb_small_head_cache
        # "tcp: let tcp_send_syn_data() build headless packets" (6.5)
        syn_data_linear=release < (6, 5),
        # "tcp: defer regular ACK while processing socket backlog" (6.7)
        backlog_ack_defer=release >= (6, 7),
        # "tcp: try to send bigger TSO packets" (6.10)
        grow_skb=release >= (6, 10),
        # "tcp: make the first N SYN RTO backoffs linear" (6.5)
        syn_linear_timeouts=4 if release >= (6, 5) else 0,
        # "net: generalize skb freeing deferral to per-cpu lists" (5.19)
        defer_free=release >= (5, 19),
    )


# x86-64 distribution builds: MAX_TCP_HEADER = L1_CACHE_ALIGN(128 + MAX_HEADER 176),
# SKB_DATA_ALIGN(sizeof(struct skb_shared_info)), SKB_DATA_ALIGN(sizeof(struct sk_buff))
MAX_TCP_HEADER, SHINFO_BYTES, SK_BUFF_BYTES = 320, 320, 256
KMALLOC_SIZES = (32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192)


def _linear_head(length: int) -> int:
    """The kmalloc'd head of a skb whose `length` bytes sit in it (before 6.5, the SYN's
    data): tcp_stream_alloc_skb(sk, length) -> __alloc_skb(length + MAX_TCP_HEADER),
    SKB_DATA_ALIGN(that) + the shared info, rounded up to its kmalloc cache
    (kmalloc_size_roundup)."""
    size = -(-(length + MAX_TCP_HEADER) // 64) * 64 + SHINFO_BYTES
    return next((k for k in KMALLOC_SIZES if k >= size), -(-size // 4096) * 4096)


def linear_tailroom(length: int) -> int:
    """The room left after `length` bytes in that head (skb_tailroom): what a later
    segment may be copied into for nothing once the skb is no clone (skb_try_coalesce:
    `len <= skb_tailroom(to)`, delta_truesize 0). 2036 bytes after 1420."""
    return _linear_head(length) - SHINFO_BYTES - MAX_TCP_HEADER - length


def linear_truesize(length: int) -> int:
    """The truesize of a skb whose `length` bytes sit in its head (before 6.5, the SYN's data).

    The head (`_linear_head`) plus the sk_buff (SKB_TRUESIZE(SKB_WITH_OVERHEAD(osize))).
    The receiver on lo charges the sender's clone, which keeps this truesize.
    """
    return _linear_head(length) + SK_BUFF_BYTES


@dataclass
class RcvSpace:
    """One socket's receive-memory state (sk_rcvbuf, sk_rmem_alloc, rcv_wnd and friends)."""

    rules: ReceiveMemory
    wscale: int
    advmss: int
    rcvbuf: int = 0
    rmem: int = 0  # sk_rmem_alloc: truesize of what the application has not read
    backlog: int = 0  # sk_backlog.len: truesize waiting while the application holds the socket
    tail_unread: bool = False  # an unread skb at the queue's tail
    tail_fresh: bool = False  # ... that is no clone, so tcp_try_coalesce may grow it
    tail_end: int = 0  # the sequence number just past that skb
    tail_room: int = 0  # its linear tailroom (a SYN's data head before 6.5; else 0)
    tail_frags: int = 0  # its page fragments (at most MAX_SKB_FRAGS)
    ratio: int = DEFAULT_SCALING_RATIO
    window_clamp: int = 0
    rcv_ssthresh: int = 0
    rcv_wnd: int = 0  # the window last advertised

    def __post_init__(self) -> None:
        self.rcvbuf = self.rules.rmem_default

    # ------------------------------------------------------------ conversions
    def win_from_space(self, space: int) -> int:
        if self.rules.scaling_ratio:
            return (space * self.ratio) >> TCP_RMEM_TO_WIN_SCALE
        return space - (space >> 1)  # tcp_adv_win_scale = 1

    def space_from_win(self, win: int) -> int:  # tcp_space_from_win
        if self.rules.scaling_ratio:
            return (win << TCP_RMEM_TO_WIN_SCALE) // self.ratio
        return win << 1  # tcp_adv_win_scale = 1

    def space(self) -> int:  # tcp_space: sk_rcvbuf - sk_backlog.len - sk_rmem_alloc
        return self.win_from_space(self.rcvbuf - self.backlog - self.rmem)

    def full_space(self) -> int:  # tcp_full_space
        return self.win_from_space(self.rcvbuf)

    # ------------------------------------------------------------ rules
    def initial_window(self, peer_timestamps_seen: bool) -> None:
        """tcp_select_initial_window: the window a SYN or SYN-ACK offers.

        The MSS it rounds to leaves room for timestamps only once the peer's
        were seen: a client's SYN rounds to advmss (tcp_connect_init: 64240 at
        MTU 1500), the SYN-ACK to advmss - 12 (tcp_openreq_init_rwin: 65160).
        """
        mss = self.advmss - (TS_OPTION_BYTES if peer_timestamps_seen else 0)
        space = self.full_space()
        if space > mss:
            space -= space % mss
        # tcp_workaround_signed_windows is 0: rcv_wnd is the whole space; the SYN's
        # header carries at most U16_MAX of it (header_window)
        self.rcv_wnd = space
        self.rcv_ssthresh = self.rcv_wnd
        self.window_clamp = U16_MAX << self.wscale

    def init_buffer_space(self) -> None:
        """tcp_init_buffer_space (tcp_app_win 31): the clamp keeps one MSS in reserve."""
        maxwin = self.full_space()
        if self.window_clamp >= maxwin:
            self.window_clamp = maxwin
        if self.window_clamp > 2 * self.advmss and self.window_clamp + self.advmss > maxwin:
            self.window_clamp = max(2 * self.advmss, maxwin - self.advmss)
        self.rcv_ssthresh = min(self.rcv_ssthresh, self.window_clamp)

    def release_tail(self, peer_snd_una: int) -> None:
        """The sender has freed everything below peer_snd_una: a clone there is no clone."""
        if self.tail_unread and peer_snd_una >= self.tail_end:
            self.tail_fresh = True

    def queue(
        self,
        length: int,
        rcv_mss: int,
        *,
        fresh: bool = True,
        measured: int | None = None,
        end: int = 0,
        syn_data: bool = False,
        segment: int | None = None,
        frags: int = 1,
    ) -> bool:
        """A data segment of `length` joined the receive queue; True if it grants a quick ACK.

        `rcv_mss` is icsk_ack.rcv_mss before tcp_measure_rcv_mss sees this segment,
        `measured` after it (tcp_grow_window runs after the measurement);
        `fresh`: the segment is a new skb (cut in software), not the sender's clone;
        `syn_data`: the SYN's data resent in its own skb (`syn_data_truesize`);
        `segment`: the largest segment of an skb tcp_add_backlog merged (its gso_size,
        which tcp_measure_rcv_mss compares with rcv_mss; the ratio is the skb's);
        `frags`: its page fragments (page_frag.py), which the tail must have room for.
        """
        linear = syn_data and self.rules.syn_data_linear
        truesize = linear_truesize(length) if linear else self.rules.skb_head_truesize + length
        if self.tail_unread and self.tail_fresh and length <= self.tail_room:
            self.tail_room -= length  # copied into the tail's head: delta_truesize 0
        elif self.tail_unread and self.tail_fresh and self.tail_frags + frags <= MAX_SKB_FRAGS:
            self.rmem += length  # coalesced into the tail: its frags
            self.tail_frags += frags
        else:
            self.rmem += truesize
            self.tail_fresh = fresh
            self.tail_room = linear_tailroom(length) if linear else 0
            self.tail_frags = frags
        self.tail_unread = True
        self.tail_end = end
        size = length if segment is None else segment
        if self.rules.scaling_ratio and size >= rcv_mss and size != rcv_mss:
            ratio = max((length << TCP_RMEM_TO_WIN_SCALE) // truesize, 1)
            if ratio != self.ratio:
                self.ratio = ratio
                self._set_window_clamp(self.full_space())
        # truesize_adjust (6.1 and 6.18): a skb whose payload is all in page frags (the
        # sender's clone) counts its frags only, so tcp_grow_window's check #2 passes
        # (a linear head is no page frag: truesize_adjust leaves it whole)
        adjusted = truesize if fresh or linear else length
        return length >= 128 and self._grow_window(length, adjusted, measured or rcv_mss)

    def syn_data_truesize(self, length: int) -> int:
        """What the skb tcp_send_syn_data built charges (linear before 6.5)."""
        if self.rules.syn_data_linear:
            return linear_truesize(length)
        return self.rules.skb_head_truesize + length

    def charge(self, length: int) -> None:
        """tcp_fastopen_add_skb: a SYN's data is queued without the data-receive path."""
        self.rmem += self.syn_data_truesize(length)
        self.tail_unread = True
        self.tail_fresh = False  # the SYN's own (cloned) skb
        self.tail_frags = 1
        self.tail_room = linear_tailroom(length) if self.rules.syn_data_linear else 0

    def read_all(self) -> None:
        self.rmem = 0
        self.tail_unread = False

    def select_window(self, rcv_mss: int) -> int:
        """__tcp_select_window: the window this socket would advertise now."""
        unit = 1 << self.wscale
        mss = rcv_mss
        free_space = self.space()
        allowed_space = self.full_space()
        full_space = min(self.window_clamp, allowed_space)
        if mss > full_space:
            mss = full_space
            if mss <= 0:
                return 0
        if free_space < (full_space >> 1):
            free_space -= free_space % unit
            if free_space < (allowed_space >> 4) or free_space < mss:
                return 0
        free_space = min(free_space, self.rcv_ssthresh)
        return -(-free_space // unit) * unit  # ALIGN(free_space, 1 << rcv_wscale)

    def advertise(self, rcv_mss: int, unacked: int) -> None:
        """tcp_select_window as a segment leaves: never below what the peer may still send."""
        current = max(self.rcv_wnd - unacked, 0)  # tcp_receive_window
        new = self.select_window(rcv_mss)
        if new < current:
            unit = 1 << self.wscale
            new = -(-current // unit) * unit
        self.rcv_wnd = new

    def window_raised(self, rcv_mss: int, unacked: int) -> bool:
        """__tcp_cleanup_rbuf's window update: a read freed enough to (at least) double the
        window the peer may still use, while that is at most half the clamp."""
        now = max(self.rcv_wnd - unacked, 0)  # tcp_receive_window
        if 2 * now > self.window_clamp:
            return False
        new = self.select_window(rcv_mss)
        return new > 0 and new >= 2 * now

    def window_if_read(self, rcv_mss: int, queued: int, rcv_wnd: int, unacked: int) -> int:
        """The window field an ACK would carry with only `queued` bytes of truesize unread.

        tcp_select_window as in `advertise`, after `rcv_wnd` was last advertised
        and `unacked` bytes arrived since; the socket's own state is untouched.
        """
        saved = self.rmem
        self.rmem = queued
        new = self.select_window(rcv_mss)
        self.rmem = saved
        current = max(rcv_wnd - unacked, 0)
        if new < current:
            unit = 1 << self.wscale
            new = -(-current // unit) * unit
        return min(new, U16_MAX << self.wscale) >> self.wscale

    def truesize(self, length: int) -> int:
        """What a data segment of `length` bytes charges as a fresh skb."""
        return self.rules.skb_head_truesize + length

    def header_window(self, *, syn: bool) -> int:
        """The window field as the header carries it (tcp_transmit_skb, tcp_select_window).

        A SYN or SYN-ACK carries the initial window unscaled (min(rcv_wnd,
        65535)); every later segment rcv_wnd >> the window scale, capped at
        65535 << scale.
        """
        if syn:
            return min(self.rcv_wnd, U16_MAX)
        return min(self.rcv_wnd, U16_MAX << self.wscale) >> self.wscale

    def right_edge_advances(self, rcv_mss: int) -> bool:
        """__tcp_ack_snd_check's second condition: __tcp_select_window() >= rcv_wnd."""
        return self.select_window(rcv_mss) >= self.rcv_wnd

    # ------------------------------------------------------------ helpers
    def _set_window_clamp(self, value: int) -> None:
        """tcp_set_window_clamp, as tcp_measure_rcv_mss calls it after a new ratio."""
        new = value  # (at least SOCK_MIN_RCVBUF / 2, far below any value here)
        old = self.window_clamp
        self.window_clamp = new
        if new < old:
            self.rcv_ssthresh = min(self.rcv_ssthresh, new)
        else:
            self.rcv_ssthresh = max(min(self.rcv_wnd, new), self.rcv_ssthresh)

    def _grow_window(self, length: int, truesize: int, rcv_mss: int) -> bool:
        """tcp_grow_window: raise rcv_ssthresh while the memory would allow it."""
        room = min(self.window_clamp, self.space()) - self.rcv_ssthresh
        if room <= 0:
            return False
        if self.win_from_space(truesize) <= length:
            incr = 2 * self.advmss
        else:
            incr = self._grow_step(length, truesize, rcv_mss)
        if not incr:
            return False
        self.rcv_ssthresh += min(room, max(incr, 2 * length))
        return True

    def _grow_step(self, length: int, truesize: int, rcv_mss: int) -> int:
        """__tcp_grow_window: a segment with much overhead may still grow a small window,
        by two of icsk_ack.rcv_mss (not advmss: 10904, not 10928, at MTU 5504)."""
        scaled = self.win_from_space(truesize) >> 1
        window = self.win_from_space(self.rules.rmem_max) >> 1
        while self.rcv_ssthresh <= window:
            if scaled <= length:
                return 2 * rcv_mss
            scaled >>= 1
            window >>= 1
        return 0


LINUX_DEFAULT = ReceiveMemory()  # a current kernel with Linux's default tcp_rmem
