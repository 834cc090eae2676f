"""Delayed ACK, quick-ACK mode and pingpong, as net/ipv4/tcp_input.c does them.

Rules (each function names the kernel function it follows; times in jiffies):
- `event_data_recv` (tcp_event_data_recv): runs after `measure_rcv_mss`
  (the kernel measures first); the first data segment starts the engine with
  tcp_incr_quickack's rcv_wnd / (2 x rcv_mss) quick ACKs (at least 2, at most
  16: 16 for small segments at any MTU, 3 for 8948-byte ones at MTU 9000;
  Linux 6.1 and 6.18 alike), ato = TCP_ATO_MIN (HZ/25, 40 ms). Later segments
  adapt ato from the inter-arrival time m; a gap longer than the RTO re-arms
  quick ACKs.
- `measure_rcv_mss` (tcp_measure_rcv_mss): a small pushed segment sets
  ICSK_ACK_PUSHED; a second one before an ACK sets ICSK_ACK_PUSHED2.
- `ack_now` (__tcp_ack_snd_check): ACK at once when more than one full frame
  is unacknowledged and the window's right edge advances (rcv_space.py), in
  quick-ACK mode (quick ACKs left and not pingpong), or
  when an ACK is due now; otherwise delay it (tcp_send_delayed_ack).
- `delayed_ack_expiry` (tcp_send_delayed_ack): ato capped by max(srtt, 40 ms)
  (by 200 ms when interactive), the timer set at jiffies + ato, never later
  than an already pending one; a pending timer about to expire sends now.
- `ack_sent` (tcp_event_ack_sent -> tcp_dec_quickack_mode and
  inet_csk_clear_xmit_timer): an ACK of new data uses up one quick ACK; every
  ACK clears the pending state (the timer, if armed, finds nothing to do).
- `data_sent` (tcp_event_data_sent): data sent less than ato after the last
  receive bumps the pingpong count; at the threshold the socket is interactive.
- `timer_fired` (tcp_delack_timer_handler): in pingpong mode it leaves pingpong
  and resets ato to 40 ms; otherwise it doubles ato (bounded by the RTO).
- `cleanup_rbuf` (__tcp_cleanup_rbuf): a read that drains the receive queue
  ACKs at once after PUSHED2, or after PUSHED when not interactive.
- `set_quickack` (__tcp_sock_set_quickack): TCP_QUICKACK=1 leaves pingpong and
  runs `cleanup_rbuf` as a read of one byte would: a pending ACK goes at once
  when more than one full segment is unacknowledged, even with all of it still
  unread (its window counts that memory), or when the queue is empty; it is
  one-shot because the next reply re-enters pingpong.
"""

from __future__ import annotations

from dataclasses import dataclass

ACK_SCHED = 1
ACK_TIMER = 2
ACK_PUSHED = 4
ACK_PUSHED2 = 8
ACK_NOW = 16

TCP_MAX_QUICKACKS = 16
TCP_MSS_DEFAULT = 536
TCP_MIN_MSS = 88


@dataclass
class AckState:
    """The receive-side ACK state of one socket (struct inet_connection_sock's icsk_ack)."""

    rcv_mss: int
    pending: int = 0
    quick: int = 0
    ato: int = 0  # jiffies; 0 until the first data segment
    lrcvtime: int = 0  # jiffies of the last data receive
    pingpong: int = 0
    timeout: int = 0  # jiffies the delayed-ACK timer expires at (when ACK_TIMER)

    @property
    def scheduled(self) -> bool:
        return bool(self.pending & ACK_SCHED)


@dataclass(frozen=True)
class DelackRules:
    """The constants of one kernel: HZ and net.ipv4.tcp_pingpong_thresh."""

    hz: int
    pingpong_thresh: int

    @property
    def ato_min(self) -> int:  # TCP_ATO_MIN = TCP_DELACK_MIN = HZ/25
        return max(self.hz // 25, 1)

    @property
    def delack_max(self) -> int:  # TCP_DELACK_MAX = HZ/5
        return max(self.hz // 5, 1)

    def in_pingpong(self, st: AckState) -> bool:
        return st.pingpong >= self.pingpong_thresh

    def in_quickack_mode(self, st: AckState) -> bool:
        return st.quick > 0 and not self.in_pingpong(st)

    def incr_quickack(
        self, st: AckState, rcv_wnd: int, max_quickacks: int = TCP_MAX_QUICKACKS
    ) -> None:
        """tcp_incr_quickack: tp->rcv_wnd / (2 x icsk_ack.rcv_mss) quick ACKs, 2 if none."""
        quickacks = rcv_wnd // (2 * st.rcv_mss) or 2
        st.quick = max(st.quick, min(quickacks, max_quickacks))

    def enter_quickack_mode(self, st: AckState, rcv_wnd: int) -> None:
        self.incr_quickack(st, rcv_wnd)
        st.pingpong = 0
        st.ato = self.ato_min

    def event_data_recv(self, st: AckState, now: int, rto: int, rcv_wnd: int) -> str | None:
        """A data segment was queued (after measure_rcv_mss); a note worth teaching, if any.

        `rcv_wnd` is the window last advertised (tp->rcv_wnd).
        """
        st.pending |= ACK_SCHED
        note = None
        if st.ato == 0:
            self.incr_quickack(st, rcv_wnd)
            st.ato = self.ato_min
            note = f"first data: quick-ACK mode ({st.quick} quick ACKs, ato 40 ms)"
        else:
            m = now - st.lrcvtime
            if m <= self.ato_min // 2:
                st.ato = (st.ato >> 1) + self.ato_min // 2
            elif m < st.ato:
                st.ato = min((st.ato >> 1) + m, rto)
            elif m > rto:
                self.incr_quickack(st, rcv_wnd)
                note = "a gap longer than the RTO: quick-ACK mode again"
        st.lrcvtime = now
        return note

    def measure_rcv_mss(self, st: AckState, length: int, psh: bool, advmss: int) -> None:
        if length >= st.rcv_mss:
            st.rcv_mss = min(length, advmss)
            if psh:
                st.pending |= ACK_PUSHED
            return
        if st.pending & ACK_PUSHED:
            st.pending |= ACK_PUSHED2
        st.pending |= ACK_PUSHED

    def ack_now(
        self,
        st: AckState,
        unacked_bytes: int,
        window_advances: bool,
        below_lowat: bool = False,
    ) -> str | None:
        """Why the ACK must go at once (None: it may be delayed).

        More than one full frame ACKs at once only if the window's right edge
        would not move left (`window_advances`, rcv_space.right_edge_advances),
        or if the unread bytes are still below the reader's SO_RCVLOWAT mark
        (`below_lowat`: rcv_nxt - copied_seq < sk_rcvlowat, __tcp_ack_snd_check,
        6.1 and 6.18: that reader will not read before more comes); otherwise
        the read (__tcp_cleanup_rbuf) or the timer sends it.
        """
        if unacked_bytes > st.rcv_mss and below_lowat:
            return (
                "more than one full segment is unacknowledged, and the unread bytes are "
                "below the reader's SO_RCVLOWAT mark"
            )
        if unacked_bytes > st.rcv_mss and window_advances:
            return "more than one full segment is unacknowledged"
        if self.in_quickack_mode(st):
            return f"quick-ACK mode ({st.quick} quick ACKs left)"
        if st.pending & ACK_NOW:
            return "an ACK is due at once"
        return None

    def delayed_ack_expiry(self, st: AckState, now: int, srtt: int | None) -> int | None:
        """Arm (or keep) the delayed-ACK timer; None means: send the ACK now instead."""
        ato = st.ato
        if ato > self.ato_min:
            max_ato = self.hz // 2
            if self.in_pingpong(st) or st.pending & ACK_PUSHED:
                max_ato = self.delack_max
            if srtt:
                max_ato = min(max_ato, max(srtt, self.ato_min))
            ato = min(ato, max_ato)
        ato = min(ato, self.delack_max)
        timeout = now + ato
        if st.pending & ACK_TIMER:
            if st.timeout <= now + (ato >> 2):
                return None
            timeout = min(timeout, st.timeout)
        st.pending |= ACK_SCHED | ACK_TIMER
        st.timeout = timeout
        return timeout

    def ack_sent(self, st: AckState) -> None:
        if st.quick:
            packets = 1 if st.scheduled else 0
            if packets >= st.quick:
                st.quick = 0
                st.ato = self.ato_min
            else:
                st.quick -= packets
        st.pending = 0

    def data_sent(self, st: AckState, now: int) -> bool:
        """True when this send made the socket interactive (crossed the threshold).

        tcp_event_data_sent: `(u32)(now - lrcvtime) < ato`, compared unsigned,
        so a socket that has received nothing yet (ato 0, or a send "before"
        the last receive on the jiffies counter) never counts as interactive.
        """
        if (now - st.lrcvtime) % (1 << 32) < st.ato:
            was = self.in_pingpong(st)
            st.pingpong = min(st.pingpong + 1, 255)
            return not was and self.in_pingpong(st)
        return False

    def timer_fired(self, st: AckState, now: int, rto: int) -> str | None:
        """The delayed-ACK timer ran; returns what it did (None: nothing to ACK)."""
        if not st.pending & ACK_TIMER:
            return None
        st.pending &= ~ACK_TIMER
        if not st.scheduled:
            return None
        if not self.in_pingpong(st):
            st.ato = min(st.ato << 1, rto)
            return "delayed ACK missed: ato doubled"
        st.pingpong = 0
        st.ato = self.ato_min
        return "the timer leaves pingpong (interactive) mode and resets ato to 40 ms"

    def cleanup_rbuf(
        self, st: AckState, copied: int, unacked_bytes: int, drained: bool
    ) -> str | None:
        """After a read (__tcp_cleanup_rbuf): why the pending ACK must go now, or None."""
        if not st.scheduled:
            return None
        if unacked_bytes > st.rcv_mss:
            return "more than one full segment is unacknowledged"
        if not (copied > 0 and drained):
            return None
        if st.pending & ACK_PUSHED2:
            return (
                "a second small pushed segment arrived while the ACK was pending "
                "(ICSK_ACK_PUSHED2, tcp_measure_rcv_mss), which ACKs even an interactive socket"
            )
        if st.pending & ACK_PUSHED and not self.in_pingpong(st):
            return (
                "the application drained a small pushed segment and the socket is not interactive"
            )
        return None

    def set_quickack(self, st: AckState, established: bool) -> bool:
        """setsockopt(TCP_QUICKACK, 1); True when tcp_cleanup_rbuf(sk, 1) must run now.

        __tcp_sock_set_quickack (6.1.176 and 6.12.117 read alike) leaves pingpong and,
        in ESTABLISHED or CLOSE_WAIT with an ACK scheduled, marks it pushed and runs
        tcp_cleanup_rbuf(sk, 1): the whole __tcp_cleanup_rbuf with one byte "copied",
        so an ACK goes at once when more than one full segment is unacknowledged
        (read or not), or when nothing is queued for recv() (`cleanup_rbuf`). The
        6.18.44 captures agree (tests/labs/test_quickack_capture.py).
        """
        st.pingpong = 0
        if established and st.scheduled:
            st.pending |= ACK_PUSHED
            return True
        return False
