"""The three-way handshake and Fast Open, for TcpEndpoint (a mixin).

Rules (tcp_output.c tcp_connect / tcp_send_syn_data, tcp_input.c
tcp_rcv_synsent_state_process / tcp_rcv_fastopen_synack, tcp_fastopen.c):
- The client's SYN carries the options (MSS, SACK permitted, timestamps,
  window scale 7) and, with Fast Open, a cookie or a cookie request and
  possibly data (see fastopen.plan_client_syn).
- The server answers with a SYN-ACK that never carries data; it acks the SYN
  data only when the listener accepted it (a Fast Open child socket, which the
  application can accept and answer at once, before the handshake ends).
- On the SYN-ACK the client caches a cookie, retransmits SYN data that was not
  acknowledged at once (the retransmission carries the ACK), and otherwise
  either ACKs at once or, when a blocking sendto()/write() is waiting for the
  connection (sk_write_pending), holds the ACK (quick-ACK mode, a 200 ms
  TCP_DELACK_MAX timer) so that the data about to be sent carries it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tfolab.model.delack import ACK_SCHED, ACK_TIMER
from tfolab.model.fastopen import CookieCache, SynDecision, SynPlan, client_learns
from tfolab.model.wire import Wire

if TYPE_CHECKING:
    from tfolab.model.endpoint import TcpEndpoint


class HandshakeMixin:
    def init_handshake(self: Any) -> None:
        self.syn_plan: SynPlan | None = None
        self.cookie_cache: CookieCache | None = None
        self.syn_data = b""
        self.write_pending = False
        self.tfo_child = False
        self.established_at: int | None = None
        self.fastopen_server = None  # the listener's FastOpenServer (server side)

    # ------------------------------------------------------------ client
    def connect(
        self: TcpEndpoint,
        now: int,
        plan: SynPlan,
        cache: CookieCache,
        *,
        write_pending: bool,
        caused_by: int | None,
    ) -> int:
        from tfolab.model.endpoint import Flight

        self.state = "SYN_SENT"
        self.syn_plan = plan
        self.cookie_cache = cache
        self.write_pending = write_pending
        data = bytes(self.unsent[: plan.data_bytes])
        del self.unsent[: plan.data_bytes]
        self.syn_data = data
        self.snd_nxt = 1 + len(data)
        what = f"SYN+data ({len(data)} B)" if data else "SYN"
        event_id = self.transmit(
            now,
            flags=("SYN",),
            seq=0,
            payload=data,
            what="SYN+data" if data else "SYN",
            explanation=f"{what}: {plan.explanation}",
            cause="the client opens the connection",
            caused_by=caused_by,
            cookie=plan.cookie,
            mss_option=self.advmss,
        )
        self.flights.append(Flight(0, 1 + len(data), now, False, event_id, data=bool(data)))
        return event_id

    def receive_synack(self: TcpEndpoint, now: int, wire: Wire) -> None:
        if not (wire.syn and "ACK" in wire.flags) or wire.ack is None:
            return
        if wire.mss_option is not None:
            self.mss_cache = min(self.advmss, wire.mss_option) - 12
        syn = self.flights[0]
        self.rtt_sample(now - syn.sent_ns)
        self.flights = []
        self.snd_una = wire.ack
        self.rcv_nxt = wire.seq + 1
        self.rcv_wup = self.rcv_nxt
        self.state = "ESTABLISHED"
        self.established_at = now
        self.ack.lrcvtime = self.jiffies(now)
        cause = "SYN-ACK arrived"
        plan = self.syn_plan
        assert plan is not None and self.cookie_cache is not None
        learnt = client_learns(self.cookie_cache, wire.cookie, len(self.syn_data), plan)
        if learnt:
            self.note(now, learnt, wire.event_id, cause)
        unacked = len(self.syn_data) > 0 and wire.ack < 1 + len(self.syn_data)
        if unacked:
            self.env.count("TCPFastOpenActiveFail", self.counting)
            self.unsent[:0] = self.syn_data
            self.snd_nxt = 1
            self.push(
                now,
                cause="the SYN-ACK acknowledged only the SYN",
                caused_by=wire.event_id,
                force_first=True,
            )
            return
        if self.syn_data:
            self.env.count("TCPFastOpenActive", self.counting)
            self.note(now, "the SYN-ACK acknowledges the SYN data: Fast Open worked", wire.event_id)
        if self.write_pending:
            rules = self.env.rules
            self.ack.pending |= ACK_SCHED | ACK_TIMER
            rules.enter_quickack_mode(self.ack)
            expiry = self.jiffies(now) + rules.delack_max
            self.ack.timeout = expiry
            self.arm_delack(
                now,
                expiry,
                wire.event_id,
                cause,
                why=(
                    "ACK held: a blocking sendto()/write() waits for this connection, "
                    "so the data about to leave (or the reply) will carry the ACK"
                ),
            )
            return
        self.send_ack(
            now,
            "the handshake's third segment: the client ACKs the SYN-ACK at once",
            cause,
            wire.event_id,
        )

    # ------------------------------------------------------------ server
    def accept_syn(self: TcpEndpoint, now: int, wire: Wire, decision: SynDecision) -> int:
        from tfolab.model.endpoint import Flight

        self.state = "SYN_RECV"
        if wire.mss_option is not None:
            self.mss_cache = min(self.advmss, wire.mss_option) - 12
        self.rcv_nxt = wire.seq + 1
        if decision.accept_data:
            self.tfo_child = True
            self.rcv_buf += wire.payload
            self.rcv_nxt += len(wire.payload)
        self.snd_nxt = 1
        self.ack.lrcvtime = self.jiffies(now)
        acks = "the SYN and its data" if decision.accept_data and wire.payload else "the SYN"
        event_id = self.transmit(
            now,
            flags=("SYN", "ACK"),
            seq=0,
            what="SYN-ACK",
            explanation=f"SYN-ACK acks {acks}: {decision.explanation}",
            cause="SYN arrived",
            caused_by=wire.event_id,
            cookie=decision.reply_cookie,
            mss_option=self.advmss,
        )
        self.flights.append(Flight(0, 1, now, False, event_id, data=False))
        return event_id

    def become_established(self: TcpEndpoint, now: int, wire: Wire) -> None:
        self.state = "ESTABLISHED"
        self.established_at = now
        if self.tfo_child and self.fastopen_server is not None:
            self.fastopen_server.pending -= 1
