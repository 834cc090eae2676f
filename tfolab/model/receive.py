"""The receive path and the delayed-ACK timer of TcpEndpoint (a mixin).

Rules (tcp_rcv_established / tcp_rcv_state_process, in this order):
- the ACK first: it frees acknowledged data, samples the RTT, moves the state
  (SYN_RECV -> ESTABLISHED, FIN_WAIT1 -> FIN_WAIT2, ...) and may release data
  held by Nagle (tcp_data_snd_check, run after the data is queued);
- then the data, in order (the link never reorders): tcp_event_data_recv and
  tcp_measure_rcv_mss update the delayed-ACK state;
- then the FIN (tcp_fin): CLOSE_WAIT enters pingpong so the ACK may ride on
  the application's own FIN; FIN_WAIT2 -> TIME_WAIT ACKs at once;
- last the ACK decision (tcp_ack_snd_check): at once, or the delayed-ACK
  timer armed on jiffies and fired on a tick (see clock.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tfolab.model.delack import ACK_NOW, ACK_SCHED
from tfolab.model.wire import Wire

if TYPE_CHECKING:
    from tfolab.model.endpoint import TcpEndpoint


class ReceiveMixin:
    def receive(self: TcpEndpoint, now: int, wire: Wire) -> None:
        if self.state == "SYN_SENT":
            self.receive_synack(now, wire)
            return
        if wire.syn or self.state == "CLOSED":
            return
        acked_new = wire.ack is not None and wire.ack > self.snd_una
        if acked_new:
            self._process_ack(now, wire)
        if wire.payload:
            if wire.seq != self.rcv_nxt:  # a duplicate: ACK it at once
                self.ack.pending |= ACK_NOW
            else:
                self.rcv_buf += wire.payload
                self.rcv_nxt += len(wire.payload)
                rules = self.env.rules
                text = rules.event_data_recv(self.ack, self.jiffies(now), self.rto_jiffies())
                rules.measure_rcv_mss(self.ack, len(wire.payload), wire.psh, self.advmss)
                if text:
                    self.note(now, f"{self.side}: {text}", wire.event_id, "tcp_event_data_recv")
        if wire.fin and wire.seq + len(wire.payload) == self.rcv_nxt:
            self._process_fin(now, wire)
        if acked_new and (self.unsent or (self.fin_requested and not self.fin_sent)):
            self.push(now, cause=f"released: ACK {wire.ack} arrived", caused_by=wire.event_id)
        if self.ack.scheduled:
            self.ack_snd_check(now, wire)

    def _process_ack(self: TcpEndpoint, now: int, wire: Wire) -> None:
        assert wire.ack is not None
        newly = [f for f in self.flights if f.end <= wire.ack]
        self.flights = [f for f in self.flights if f.end > wire.ack]
        fresh = [f for f in newly if not f.retransmitted]
        if fresh:
            self.rtt_sample(now - fresh[0].sent_ns)
        self.snd_una = wire.ack
        self.marks = [m for m in self.marks if m.end > self.snd_una]
        if self.state == "SYN_RECV":
            self.become_established(now, wire)
        elif self.state == "FIN_WAIT1" and self.fin_sent and self.snd_una == self.snd_nxt:
            self.state = "FIN_WAIT2"
        elif self.state == "CLOSING" and self.snd_una == self.snd_nxt:
            self.state = "TIME_WAIT"
        elif self.state == "LAST_ACK" and self.snd_una == self.snd_nxt:
            self.state = "CLOSED"

    def _process_fin(self: TcpEndpoint, now: int, wire: Wire) -> None:
        self.rcv_nxt += 1
        self.fin_received = True
        self.ack.pending |= ACK_SCHED  # tcp_fin: inet_csk_schedule_ack
        if self.state in ("ESTABLISHED", "SYN_RECV"):
            self.state = "CLOSE_WAIT"
            self.ack.pingpong = self.env.rules.pingpong_thresh  # inet_csk_enter_pingpong_mode
        elif self.state == "FIN_WAIT1":
            self.state = "CLOSING"
            self.ack.pending |= ACK_NOW
        elif self.state == "FIN_WAIT2":
            self.state = "TIME_WAIT"
            self.ack.pending |= ACK_NOW
            self.note(now, f"{self.side} enters TIME_WAIT", wire.event_id)

    def ack_snd_check(self: TcpEndpoint, now: int, wire: Wire) -> None:
        rules = self.env.rules
        why = rules.ack_now(self.ack, self.rcv_nxt - self.rcv_wup)
        cause = f"{wire.what} (seq {wire.seq}:{wire.seq + len(wire.payload)}) arrived"
        if why is not None:
            self.send_ack(now, f"ACK at once: {why}", cause, wire.event_id)
            return
        expiry = rules.delayed_ack_expiry(self.ack, self.jiffies(now), self.srtt_jiffies())
        if expiry is None:
            self.send_ack(
                now, "ACK now: the delayed-ACK timer was about to expire", cause, wire.event_id
            )
            return
        self.arm_delack(now, expiry, wire.event_id, cause)

    def arm_delack(
        self: TcpEndpoint, now: int, expiry: int, caused_by: int, cause: str, why: str | None = None
    ) -> None:
        fire = self.env.clock.timer_fires_at(expiry, now)
        if fire == self.delack_fire_ns:
            return
        rules = self.env.rules
        wait_ms = (fire - now) / 1e6
        ato_ms = self.env.clock.jiffies_to_ms(expiry - self.jiffies(now))
        if why is not None:
            pass
        elif self.state == "CLOSE_WAIT":
            why = f"ACK of the FIN held: {self.side} hopes to send it with its own FIN"
        elif rules.in_pingpong(self.ack):
            why = (
                f"ACK held: the {self.side} is interactive and waits up to {ato_ms:.0f} ms "
                "to piggyback it on a reply"
            )
        else:
            why = f"ACK delayed: not in quick-ACK mode, the {self.side} waits up to {ato_ms:.0f} ms"
        self.delack_fire_ns = fire
        self.delack_event = self.env.recorder.timer(
            now,
            fire,
            iteration=self.iteration,
            connection=self.connection,
            side=self.side,
            name="delack",
            action="armed",
            explanation=f"{why} (fires in {wait_ms:.1f} ms, on a tick)",
            cause=cause,
            caused_by=caused_by,
        ).id
        self.env.watch_timer(self, fire)

    def on_timer(self: TcpEndpoint, now: int) -> None:
        if self.delack_fire_ns != now:
            return
        self.delack_fire_ns = None
        what = self.env.rules.timer_fired(self.ack, self.jiffies(now), self.rto_jiffies())
        fired = self.env.recorder.timer(
            now,
            now,
            iteration=self.iteration,
            connection=self.connection,
            side=self.side,
            name="delack",
            action="fired",
            explanation=f"delayed-ACK timer fired: {what}"
            if what
            else "delayed-ACK timer: nothing to do",
            cause="the timer expired",
            caused_by=self.delack_event,
        ).id
        if what is not None:
            self.send_ack(
                now,
                "the delayed ACK finally goes (sent by the timer)",
                "the delayed-ACK timer fired",
                fired,
            )
