"""One TCP socket: sequence numbers, the send path, the receive path, ACKs.

Rules:
- h11/aioquic style: every entry point takes `now` (integer ns); the socket
  never looks at a clock of its own. Timers are deadlines the loop watches.
- Relative sequence numbers: each side's ISN is 0, the SYN and the FIN take
  one number each, data starts at 1.
- Receive processing follows tcp_rcv_established / tcp_rcv_state_process:
  the ACK first (which may release held data: tcp_data_snd_check), then the
  data (tcp_event_data_recv), then the FIN, then the ACK decision
  (tcp_ack_snd_check). The application runs after that, in `app` calls.
- The link is loopback with a fixed delay and no loss, so segments arrive in
  order; there is no retransmission timer. Congestion and receive windows
  never limit these scripts (at most 3 segments in flight), so neither is modelled.
- cwnd, SACK and window scaling appear as options only.
- Handshake and Fast Open specifics live in handshake.py (HandshakeMixin), the
  receive path and the delayed-ACK timer in receive.py (ReceiveMixin).
"""

from __future__ import annotations

from dataclasses import dataclass

from tfolab.model import nagle
from tfolab.model.delack import TCP_MIN_MSS, TCP_MSS_DEFAULT, AckState
from tfolab.model.events import CookieInfo, Side
from tfolab.model.handshake import HandshakeMixin
from tfolab.model.receive import ReceiveMixin
from tfolab.model.wire import Env, Wire

IPV4_MAX_PMTU = 65535
TS_OPTION_BYTES = 12  # timestamps on every segment: the MSS in use is 12 B less
RTO_MIN_NS = 200_000_000
RTO_INIT_NS = 1_000_000_000


@dataclass
class Flight:
    """A sent, unacknowledged piece of sequence space."""

    seq: int
    end: int
    sent_ns: int
    retransmitted: bool
    event_id: int
    data: bool = True


@dataclass(frozen=True)
class WriteMark:
    """One application write, to name the segments that carry it."""

    start: int
    end: int
    name: str


class TcpEndpoint(HandshakeMixin, ReceiveMixin):
    def __init__(
        self,
        env: Env,
        *,
        side: Side,
        connection: int,
        iteration: int,
        mtu: int,
        nodelay: bool = False,
        autocorking: bool = True,
        counting: bool = True,
    ) -> None:
        self.env = env
        self.side: Side = side
        self.peer: Side = "server" if side == "client" else "client"
        self.connection = connection
        self.iteration = iteration
        self.counting = counting
        self.state = "CLOSED"
        # ipv4_default_advmss(): the path MTU is capped at IPV4_MAX_PMTU (65535), so
        # loopback's 65536 gives an MSS option of 65495 and, with timestamps, an
        # effective MSS (mss_cache, what `ss -i` shows as mss) of 65483.
        self.advmss = min(mtu, IPV4_MAX_PMTU) - 40
        self.mss_cache = self.advmss - TS_OPTION_BYTES
        self.nodelay = nodelay
        self.autocorking = autocorking
        self.cork = False
        self.msg_more = False
        # send side
        self.snd_una = 0
        self.snd_nxt = 0
        self.snd_sml = 0
        self.write_seq = 1  # the sequence number of the next byte the app writes
        self.unsent = bytearray()
        self.marks: list[WriteMark] = []
        self.flights: list[Flight] = []
        self.fin_requested = False
        self.fin_sent = False
        self.srtt_ns: int | None = None
        self.rttvar_ns = 0
        self.held_note: int | None = None  # snd_nxt for which a hold was already explained
        # receive side
        self.rcv_nxt = 0
        self.rcv_wup = 0
        self.rcv_buf = bytearray()
        self.delivered = bytearray()  # everything the application has read, in order
        self.fin_received = False
        rcv_mss = max(min(self.advmss, 65535 // 2, TCP_MSS_DEFAULT), TCP_MIN_MSS)
        self.ack = AckState(rcv_mss=rcv_mss)
        self.delack_fire_ns: int | None = None
        self.delack_event: int | None = None
        self.release_at: int | None = None
        self.init_handshake()

    # ------------------------------------------------------------ helpers
    def jiffies(self, now: int) -> int:
        return self.env.clock.jiffies(now)

    def rto_jiffies(self) -> int:
        if self.srtt_ns is None:
            rto = RTO_INIT_NS
        else:
            rto = self.srtt_ns + max(4 * self.rttvar_ns, RTO_MIN_NS)
        return self.env.clock.ns_to_jiffies_up(rto)

    def srtt_jiffies(self) -> int | None:
        if self.srtt_ns is None:
            return None
        return self.env.clock.ns_to_jiffies_up(self.srtt_ns)

    def rtt_sample(self, sample_ns: int) -> None:
        if self.srtt_ns is None:
            self.srtt_ns, self.rttvar_ns = sample_ns, sample_ns // 2
        else:
            self.rttvar_ns = (3 * self.rttvar_ns + abs(self.srtt_ns - sample_ns)) // 4
            self.srtt_ns = (7 * self.srtt_ns + sample_ns) // 8

    def note(self, now: int, text: str, caused_by: int | None = None, cause: str = "") -> int:
        return self.env.recorder.note(
            now,
            iteration=self.iteration,
            connection=self.connection,
            side=self.side,
            text=text,
            cause=cause,
            caused_by=caused_by,
        ).id

    def next_deadline(self) -> int | None:
        """The next instant (ns) this socket needs `on_timer`/`on_release` called, if any."""
        pending = [t for t in (self.delack_fire_ns, self.release_at) if t is not None]
        return min(pending) if pending else None

    @property
    def packets_out(self) -> int:
        return len(self.flights)

    @property
    def readable(self) -> bool:
        return bool(self.rcv_buf) or self.fin_received

    # ------------------------------------------------------------ transmit
    def transmit(
        self,
        now: int,
        *,
        flags: tuple[str, ...],
        seq: int,
        payload: bytes = b"",
        what: str,
        explanation: str,
        cause: str,
        caused_by: int | None,
        cookie: CookieInfo | None = None,
        mss_option: int | None = None,
    ) -> int:
        ack = self.rcv_nxt if "ACK" in flags else None
        if ack is not None:
            self.rcv_wup = self.rcv_nxt
        options = ("TS",)
        if mss_option is not None:
            options = (f"mss {mss_option}", "sackOK", "TS", "wscale 7")
        if cookie is not None:
            options += (cookie.describe(),)
        arrival = self.env.link.arrival(now)
        event = self.env.recorder.segment(
            iteration=self.iteration,
            connection=self.connection,
            sent_ns=now,
            arrived_ns=arrival,
            sender=self.side,
            flags=flags,
            seq=seq,
            ack=ack,
            length=len(payload),
            options=options,
            cookie=cookie,
            what=what,
            explanation=explanation,
            cause=cause,
            caused_by=caused_by,
        )
        wire = Wire(
            self.side, self.connection, flags, seq, ack, payload, cookie, mss_option, event.id, what
        )
        self.env.transmit(wire, arrival)
        if ack is not None:
            self._ack_sent(now, event.id, what)
        if payload and self.env.rules.data_sent(self.ack, self.jiffies(now)):
            self.note(
                now,
                f"{self.side} enters pingpong (interactive) mode: it sent data within ato of "
                "receiving data, so from now on it delays its ACKs hoping to piggyback them",
                event.id,
                "tcp_event_data_sent",
            )
        return event.id

    def _ack_sent(self, now: int, event_id: int, what: str) -> None:
        self.env.rules.ack_sent(self.ack)
        if self.delack_fire_ns is not None:
            self.env.recorder.timer(
                now,
                self.delack_fire_ns,
                iteration=self.iteration,
                connection=self.connection,
                side=self.side,
                name="delack",
                action="cancelled",
                explanation=f"no delayed ACK needed: the {what} segment carries the ACK",
                cause="an ACK left",
                caused_by=event_id,
            )
            self.delack_fire_ns = None

    def send_ack(self, now: int, explanation: str, cause: str, caused_by: int | None) -> int:
        return self.transmit(
            now,
            flags=("ACK",),
            seq=self.snd_nxt,
            what="ACK",
            explanation=explanation,
            cause=cause,
            caused_by=caused_by,
        )

    # ------------------------------------------------------------ send path
    def segment_name(self, seq: int, end: int) -> str:
        names = []
        for mark in self.marks:
            if mark.end <= seq or mark.start >= end:
                continue
            whole = mark.start >= seq and mark.end <= end
            names.append(mark.name if whole else f"{mark.name} (part)")
        return "+".join(names) or "data"

    def push(
        self, now: int, *, cause: str, caused_by: int | None, force_first: bool = False
    ) -> bool:
        """tcp_write_xmit: send what Nagle/cork allow; True if anything left."""
        sent = False
        while self.unsent and self.state_allows_data():
            n = min(self.mss_cache, len(self.unsent))
            last = n == len(self.unsent)
            mode = nagle.SendMode(self.nodelay, self.cork, self.msg_more, force_first)
            reason = nagle.hold_reason(
                partial=n < self.mss_cache,
                last=last,
                mode=mode,
                packets_out=self.packets_out,
                snd_sml=self.snd_sml,
                snd_una=self.snd_una,
                snd_nxt=self.snd_nxt,
            )
            if reason is not None:
                if self.held_note != self.snd_nxt:
                    self.held_note = self.snd_nxt
                    name = self.segment_name(self.snd_nxt, self.snd_nxt + n)
                    self.note(now, f"{name} ({n} B) waits: {reason}", caused_by, cause)
                break
            payload = bytes(self.unsent[:n])
            del self.unsent[:n]
            seq = self.snd_nxt
            self.snd_nxt += n
            name = self.segment_name(seq, seq + n)
            if force_first:
                why = f"{name}: sent again at once, the SYN-ACK did not acknowledge the SYN data"
            elif self.held_note == seq:
                why = f"{name} leaves now: {cause}"
            else:
                why = f"{name} ({n} B) leaves at once"
            flags = ("ACK", "PSH") if last or self._ends_write(seq + n) else ("ACK",)
            event_id = self.transmit(
                now,
                flags=flags,
                seq=seq,
                payload=payload,
                what=name,
                explanation=why,
                cause=cause,
                caused_by=caused_by,
            )
            self.flights.append(Flight(seq, seq + n, now, force_first, event_id))
            if n < self.mss_cache and not force_first:
                self.snd_sml = seq + n  # tcp_minshall_update
            force_first = False
            sent = True
        if not self.unsent and self.fin_requested and not self.fin_sent:
            self._send_fin(now, cause, caused_by)
            sent = True
        return sent

    def _ends_write(self, end: int) -> bool:
        return any(mark.end == end for mark in self.marks)

    def state_allows_data(self) -> bool:
        return self.state in ("ESTABLISHED", "CLOSE_WAIT", "SYN_RECV")

    def _send_fin(self, now: int, cause: str, caused_by: int | None) -> None:
        seq = self.snd_nxt
        self.snd_nxt += 1
        self.fin_sent = True
        self.state = "FIN_WAIT1" if self.state in ("ESTABLISHED", "SYN_RECV") else "LAST_ACK"
        event_id = self.transmit(
            now,
            flags=("FIN", "ACK"),
            seq=seq,
            what="FIN",
            explanation=f"close(): the {self.side}'s FIN (not on the headline's path)",
            cause=cause,
            caused_by=caused_by,
        )
        self.flights.append(Flight(seq, seq + 1, now, False, event_id, data=False))

    # ------------------------------------------------------------ application side
    def app_write(
        self, now: int, data: bytes, name: str, *, msg_more: bool = False, caused_by: int | None
    ) -> None:
        self.marks.append(WriteMark(self.write_seq, self.write_seq + len(data), name))
        self.write_seq += len(data)
        self.unsent += data
        self.msg_more = msg_more
        if not self.state_allows_data():
            return
        delay = self.env.link.one_way_delay_ns
        charged = [f for f in self.flights if f.data and f.sent_ns + delay > now]
        reason = nagle.autocork_reason(
            enabled=self.autocorking and self.env.link.skb_charged_while_delayed,
            skb_len=len(self.unsent),
            size_goal=self.mss_cache,
            unacked=bool(self.flights),
            earlier_skb_charged=bool(charged),
        )
        if reason is not None:
            release = min(f.sent_ns for f in charged) + self.env.link.one_way_delay_ns
            self.release_at = release
            self.held_note = self.snd_nxt
            self.note(now, f"{name} waits: {reason}", caused_by, "tcp_should_autocork")
            self.env.watch_release(self, release)
            return
        self.push(now, cause=f"the application wrote {name}", caused_by=caused_by)

    def on_release(self, now: int) -> None:
        """The delay queue freed an earlier skb: TSQ pushes the autocorked data."""
        if self.release_at != now:
            return
        self.release_at = None
        delay = self.env.link.one_way_delay_ns
        earliest = [f.event_id for f in self.flights if f.data and f.sent_ns + delay == now]
        event = self.note(
            now,
            "the earlier segment left the delay queue; its memory is freed (TSQ)",
            earliest[0] if earliest else None,
            "the delay backend released the skb",
        )
        self.push(now, cause="released: the earlier segment left the delay queue", caused_by=event)

    def set_cork(self, now: int, on: bool, caused_by: int | None) -> None:
        self.cork = on
        if not on:
            self.push(now, cause="TCP_CORK cleared", caused_by=caused_by)

    def app_read(self, now: int, caused_by: int | None) -> bytes:
        data = bytes(self.rcv_buf)
        self.rcv_buf.clear()
        self.delivered += data
        rules = self.env.rules
        if rules.cleanup_rbuf(self.ack, len(data), self.rcv_nxt - self.rcv_wup, True):
            self.send_ack(
                now,
                "ACK at read: the application drained a small pushed segment and the "
                f"{self.side} is not interactive (tcp_cleanup_rbuf)",
                "the application read",
                caused_by,
            )
        return data

    def set_quickack(self, now: int, caused_by: int | None) -> None:
        interactive = self.env.rules.in_pingpong(self.ack)
        flush = self.env.rules.set_quickack(self.ack, not self.rcv_buf)
        if interactive:
            self.note(now, "TCP_QUICKACK: the server leaves pingpong mode (one-shot)", caused_by)
        if flush:
            self.send_ack(now, "TCP_QUICKACK flushes the pending ACK", "TCP_QUICKACK", caused_by)

    def app_close(self, now: int, caused_by: int | None) -> None:
        self.fin_requested = True
        self.push(now, cause="the application called close()", caused_by=caused_by)
