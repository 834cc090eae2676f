"""One TCP socket's state as a record (the kernel's struct tcp_sock), and its small helpers.

Rules:
- This is data plus derived values. The behaviour lives in functions that
  take the record, the way the kernel's tcp_*() functions take a struct sock:
  output.py (sending), receive.py (a segment arrives), handshake.py (SYN,
  SYN-ACK, Fast Open), delack_timer.py (the ACK decision and its timer).
  endpoint.py wraps them into the socket the applications and the loop use.
- h11/aioquic style: every helper takes `now` (integer ns); the socket never
  looks at a clock of its own. Its one timer is a deadline the loop watches.
- Relative sequence numbers: each side's ISN is 0, the SYN and the FIN take
  one number each, data starts at 1.
- `state` changes only through `move()`, which asks the transition table in
  state.py. A server socket starts in LISTEN (it stands for the listener
  until the SYN makes it the child), a client socket in CLOSED.
- MSS: ipv4_default_advmss() caps the path MTU at IPV4_MAX_PMTU (65535), so
  loopback's 65536 gives an MSS option of 65495; with timestamps on every
  segment the MSS in use (mss_cache, `ss -i`'s mss) is TS_OPTION_BYTES less,
  65483, and a smaller MSS option from the peer lowers it (tcp_sync_mss).
  Below an MTU of 296 the option is still 256 (the route's min_adv_mss,
  ipv4_default_advmss) while the segments sent stay within the MTU.
  tcp_sync_mss also bounds it to half the largest window the peer offered
  (tcp_bound_to_half_wnd, 6.1 and 6.18): at loopback's MTU a 64 KiB window
  makes the MSS 32768, so a 34022-byte write leaves as 32768 + 1254.
- `owner` is the application holding the socket (sock_owned_by_user): set
  only where a reader takes it while its peer still sends (backlog.py), when
  segments wait in the backlog instead of being received.
- RTT and RTO: the kernel's tcp_rtt_estimator and __tcp_set_rto over the
  samples taken so far (rtt_estimator.py; TCP_TIMEOUT_INIT before any sample),
  each sample in whole microseconds as the kernel takes it, one more than the
  model's round trip (the host's time is never zero); rtt_seq marks the
  round trip a sample's ACK must pass to end a round.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tfolab.model import rtt_estimator
from tfolab.model.burst import Burst
from tfolab.model.clock import JiffyClock
from tfolab.model.delack import TCP_MIN_MSS, TCP_MSS_DEFAULT, AckState
from tfolab.model.events import Side, TimerAction
from tfolab.model.fastopen import CookieCache, FastOpenServer, SynPlan
from tfolab.model.flights import Flight, LostTail, Resend, WriteMark
from tfolab.model.pacing import TCP_INIT_CWND
from tfolab.model.page_frag import PageFrag
from tfolab.model.rcv_space import RcvSpace
from tfolab.model.request_sock import Request
from tfolab.model.rtt_estimator import RttEstimate, RttSample
from tfolab.model.state import SENDS_DATA, TcpEvent, TcpState, next_state
from tfolab.model.wire import Env, Wire

IPV4_MAX_PMTU = 65535
IPV4_TCP_HEADERS = 40  # 20 B IPv4 + 20 B TCP, without options
TCP_MSS_DESIRED = 1220  # include/net/tcp.h
ROUTE_MIN_ADVMSS = 256  # net.ipv4.route.min_adv_mss
LOOPBACK_MTU = 65536  # lo's own MTU: TSO/GSO on, segments cross whole (clones)
TS_OPTION_BYTES = 12  # the timestamps option, on every segment
RTO_MIN_NS = 200_000_000  # TCP_RTO_MIN
RTO_INIT_NS = 1_000_000_000  # TCP_TIMEOUT_INIT
NS_PER_US = 1000
HOST_US = 1  # the least host time in a kernel RTT sample (tcp_stamp_us_delta)
TCP_INVALID_RATELIMIT_MS = 500  # net.ipv4.tcp_invalid_ratelimit's default


@dataclass
class Owner:
    """The application's hold on its socket (sock_owned_by_user) and what waits meanwhile."""

    blocking: bool  # a blocking read(): its tcp_cleanup_rbuf waits for the backlog
    backlog: list[Wire] = field(default_factory=list)  # sk_backlog, in arrival order
    processing: bool = False  # __release_sock is running the backlog
    ack_deferred: bool = False  # TCP_ACK_DEFERRED (6.7+)
    read_event: int | None = None  # what the reader's copy was recorded as (a Note)
    recv: bool = False  # a MSG_DONTWAIT recv() holds it: its tcp_cleanup_rbuf ends its copy
    # where that tcp_cleanup_rbuf ran late (a "cleanup" point of a recv(), loop.py): after
    # the segment ending here joined the backlog; with the bytes the recv() copied
    cleanup_until: int | None = None
    cleanup_copied: int = 0


class TcpSock:
    """Everything one socket knows; see the module docstring for who changes what."""

    def __init__(
        self,
        env: Env,
        *,
        side: Side,
        connection: int,
        iteration: int,
        mtu: int,
        nodelay: bool = False,
        counting: bool = True,
    ) -> None:
        self.env = env
        self.side: Side = side
        self.connection = connection
        self.iteration = iteration  # labels the events; the scripts move it on per round
        self.counting = counting  # False on the unmeasured warm-up: no TcpExt counters
        self.state = TcpState.LISTEN if side == "server" else TcpState.CLOSED
        # ipv4_default_advmss: the MSS option is at least the route's min_adv_mss (256)
        self.advmss = max(min(mtu, IPV4_MAX_PMTU) - IPV4_TCP_HEADERS, ROUTE_MIN_ADVMSS)
        self.pmtu_mss = min(mtu, IPV4_MAX_PMTU) - IPV4_TCP_HEADERS  # tcp_mtu_to_mss
        self.mss_base = self.pmtu_mss - TS_OPTION_BYTES  # from the MTU and the peer's option
        self.max_window = 0  # the largest window the peer offered (tp->max_window)
        self.snd_wnd = 0  # the window the peer offers now, in bytes (tp->snd_wnd)
        self.snd_wl1 = 0  # the peer's seq that last updated it (tcp_may_update_window)
        self.wstamp_ns = -1  # the last transmit of any segment (tp->tcp_wstamp_ns)
        self.psh_race = False  # this ACK train's GSO skb ends are a race (output.py)
        self.mss_window = 0  # the max_window tcp_sync_mss last bounded mss_cache with
        # the send side
        self.nodelay = nodelay
        self.cork = False
        self.msg_more = False
        self.snd_una = 0
        self.snd_nxt = 0
        self.snd_sml = 0  # the end of the last small segment sent (tcp_minshall_update)
        self.write_seq = 1  # the sequence number of the next byte the app writes
        self.unsent = bytearray()
        self.marks: list[WriteMark] = []
        # tcp_sendmsg_locked's skbs over the unsent bytes: where each ends, and the ends
        # forced_push marked with PSH; pushed_seq as tcp_mark_push last left it
        self.skb_ends: list[int] = []
        # its view of its process's pages, which its writes were copied into (page_frag.py)
        self.page_frag = PageFrag(env.task_frags[side])
        self.forced_psh: set[int] = set()
        self.pushed_seq = 1  # tcp_connect, tcp_create_openreq_child: ISN + 1
        self.flights: list[Flight] = []
        self.fin_requested = False
        self.fin_sent = False
        # tcp_rtt_estimator's samples (microseconds) and its estimate after them; rtt_seq
        # the snd_nxt at the start of the estimator's round (None: no sample yet)
        self.rtt_history: list[RttSample] = []
        self.rtt: RttEstimate | None = None
        self.rtt_seq: int | None = None
        self.min_rtt_ns: int | None = None  # tcp_min_rtt (the windowed minimum: the labs are short)
        self.held_note: int | None = None  # snd_nxt for which a hold was already explained
        # slow start (tcp_is_cwnd_limited, tcp_slow_start): the most segments in flight
        # since the last ACK, and whether an ACK has since grown cwnd past TCP_INIT_CWND
        self.max_packets_out = 0
        self.cwnd_grown_by: int | None = None  # the flight (segments) whose ACK grew it
        self.snd_cwnd = TCP_INIT_CWND  # tcp_init_cwnd (no route metric on lo)
        self.total_retrans = 0  # segments sent again (the handshake's, for tcp_init_transfer)
        # the tail-loss probe (loss_probe.py) and the RTO after it (loss_rto.py): the lost
        # lone segment they wait for, the one either of them is sending again (None: none),
        # icsk_backoff, tlp_high_seq (None: 0), and ssthresh once a loss cut it
        self.lost_tail: LostTail | None = None
        self.resending: Resend | None = None
        self.last_resend: Resend | None = None  # the latest probe or RTO's, kept
        self.rto_backoff = 0
        self.tlp_high_seq: int | None = None
        self.snd_ssthresh: int | None = None
        self.dropped: dict[int, Wire] = {}  # by seq: what the peer dropped (retransmit.py)
        # the receive side
        self.rcv_nxt = 0
        self.rcv_wup = 0  # rcv_nxt when the last ACK left
        # the most any segment of this side acknowledged (None: none yet), the model's
        # own record: which lost segment was the first to acknowledge something (ack_loss)
        self.last_ack_sent: int | None = None
        # tcp_oow_rate_limited: when the last ACK answering an out-of-window segment left
        # (jiffies; None: never, as tcp_create_openreq_child and tcp_connect start it)
        self.last_oow_ack_jiffies: int | None = None
        self.tw_last_oow_ack_jiffies: int | None = None  # the same, once in TIME_WAIT
        # when the peer segment whose TSval this side echoes left (the SYN or SYN-ACK it
        # accepted first: Wire.echoes_ns); the server's request sock while in SYN_RECV
        # (synack_timer.py)
        self.ts_recent_ns: int | None = None
        self.request: Request | None = None
        # the level-1 (or higher) timers this socket armed: when each fires (or fired)
        # and its bucket's width in ticks (note_wheel_race)
        self.wheel_deadlines: list[tuple[int, int]] = []
        self.rcv_buf = bytearray()
        # what a reader that took the socket early copied out already (backlog.py); its
        # read() returns it with what is queued after the release
        self.pre_read = bytearray()
        self.pre_read_acked = False  # ... and its tcp_cleanup_rbuf ran (a MSG_DONTWAIT recv)
        self.delivered = bytearray()  # everything the application has read, in order
        self.fin_received = False
        self.fin_read = False  # the application's recv() returned end of file
        self.rcvlowat = 1  # sk_rcvlowat (SO_RCVLOWAT; 1 unless the application set it)
        self.ack = AckState(rcv_mss=self._initial_rcv_mss())
        self.rspace = RcvSpace(env.rmem, env.wscale, self.advmss)
        # below lo's MTU the lab turns GSO off: a packet of several segments is cut in
        # software (skb_segment) into fresh skbs; one segment, or any at lo's MTU, is a clone
        self.software_gso = mtu < LOOPBACK_MTU
        self.rspace.initial_window(peer_timestamps_seen=side == "server")
        # tcp_add_backlog: while the application holds the socket (a read that
        # only just ran), segments of one burst may be merged into one
        self.app_busy_until_ns = -1  # the application may hold the socket lock until then
        # the last read: when the model ran it and the truesize it freed; without a delay
        # a segment within the reaction time may be processed before the read copied
        # (delack_timer.unread_windows)
        self.read_at_ns = -1
        self.read_freed = 0
        self.unread_edge: int | None = None  # the right edge ACKs offered had it not run
        self.more_in_burst = False  # the segment being received is not its burst's last
        self.burst = Burst()  # the data segments of the burst being received (burst.py)
        self.owner: Owner | None = None  # its application holds it (backlog.py)
        # rcv_nxt at the end of a burst whose race ACK may have covered it all: the next
        # pure ACK of exactly that (timer or read) leaves only if it did not
        self.merged_burst_end: int | None = None
        # the other end, where the loop made both: whose retransmit queue still holds
        # (and so keeps cloned) the skbs this socket received (rcv_space.py)
        self.peer: TcpSock | None = None
        self.delack_fire_ns: int | None = None  # when the armed delayed-ACK timer fires
        self.delack_event: int | None = None  # the Timer event that armed it
        self.delack_armed_ns = 0  # when it was armed
        self.delack_ato_jiffies = 0  # for how many jiffies (expiry - jiffies then)
        # the handshake and Fast Open
        self.syn_plan: SynPlan | None = None  # client: what its SYN carried
        self.cookie_cache: CookieCache | None = None  # client: its tcp_metrics entry
        self.syn_data = b""  # client: the data its SYN carried
        self.write_pending = False  # client: a blocking sendto()/write() waits (sk_write_pending)
        self.tfo_child = False  # server: made from a SYN whose data was accepted
        self.fastopen_queue: FastOpenServer | None = None  # server: the listener's TFO queue

    # ------------------------------------------------------------ state
    def move(self, event: TcpEvent) -> TcpState:
        """The one place a state changes: the table decides (state.py)."""
        self.state = next_state(self.state, event)
        return self.state

    def can_send_data(self) -> bool:
        return self.state in SENDS_DATA

    def clamp_mss(self, peer_mss_option: int) -> None:
        """tcp_sync_mss: the peer's MSS option lowers the MSS in use.

        Before any data, tcp_initialize_rcv_mss (run as the connection is
        established) guesses rcv_mss from the MSS in use as well.
        """
        self.mss_base = min(self.pmtu_mss, peer_mss_option) - TS_OPTION_BYTES
        if self.ack.ato == 0:
            self.ack.rcv_mss = self._initial_rcv_mss()

    @property
    def mss_cache(self) -> int:
        """tcp_sync_mss: the MSS in use, bounded to half the peer's largest window as it
        was at the last tcp_sync_mss (`mss_window`)."""
        return self.bound_to_half_wnd(self.mss_base, self.mss_window)

    def bound_to_half_wnd(self, size: int, window: int | None = None) -> int:
        """tcp_bound_to_half_wnd: at most half the peer's largest window (once that
        window is over TCP_MSS_DESIRED), and never below 68 bytes of packet."""
        window = self.max_window if window is None else window
        cutoff = window >> 1 if window > TCP_MSS_DESIRED else window
        if cutoff and size > cutoff:
            return max(cutoff, 68 - (20 + TS_OPTION_BYTES))
        return size

    def timestamps_on(self) -> None:
        """tp->advmss -= TCPOLEN_TSTAMP_ALIGNED once the connection uses timestamps
        (tcp_rcv_synsent_state_process; tcp_rcv_state_process in SYN_RECV): the advmss
        that tcp_grow_window, tcp_measure_rcv_mss and tcp_init_buffer_space use."""
        self.advmss -= TS_OPTION_BYTES
        self.rspace.advmss = self.advmss

    def peer_window(self, window: int, seq: int | None = None, ack: int | None = None) -> None:
        """tcp_ack_update_window (and the handshake): the offer becomes snd_wnd where
        tcp_may_update_window allows (an ACK that acknowledges new data, a later seq,
        or the same seq offering more or nothing), and a larger one re-syncs the MSS."""
        if (
            seq is None
            or ack is None
            or ack > self.snd_una
            or seq > self.snd_wl1
            or (seq == self.snd_wl1 and (window > self.snd_wnd or window == 0))
        ):
            self.snd_wnd = window
            if seq is not None:
                self.snd_wl1 = seq
            if window > self.max_window:
                self.max_window = self.mss_window = window

    def fastopen_child_mss(self, syn_window: int) -> None:
        """A Fast Open child's MSS is synced with its SYN's window scaled.

        tcp_create_openreq_child shifts the SYN's window by the peer's window
        scale, and tcp_v4_syn_recv_sock's tcp_sync_mss bounds the MSS with that;
        tcp_fastopen_create_child then sets snd_wnd and max_window to the
        unscaled window (RFC 7323: a SYN's is never scaled) and syncs nothing
        (6.1 and 6.18). So until a larger offer re-syncs it, the child's MSS is
        the path's whole MSS, and one write of up to it leaves as one segment
        (tcp_xmit_size_goal never goes below mss_now).
        """
        self.mss_window = max(self.mss_window, syn_window << self.env.wscale)

    def _initial_rcv_mss(self) -> int:
        """tcp_initialize_rcv_mss: min(advmss, mss_cache, rcv_wnd / 2, 536), at least 88."""
        hint = min(self.advmss, self.mss_cache, 65535 // 2, TCP_MSS_DEFAULT)
        return max(hint, TCP_MIN_MSS)

    @property
    def wnd_end(self) -> int:
        """tcp_wnd_end: snd_una + snd_wnd. A Fast Open child starts at snd_una = ISN + 1
        (tcp_create_openreq_child): its SYN-ACK, which `flights` keeps, is not its own."""
        una = max(self.snd_una, 1) if self.tfo_child else self.snd_una
        return una + self.snd_wnd

    @property
    def packets_out(self) -> int:
        return len(self.flights)

    @property
    def cwnd_packets_out(self) -> int:
        """tp->packets_out as tcp_cwnd_test and tcp_cwnd_validate count it.

        A Fast Open child's SYN-ACK is the request sock's, not an skb of the
        child: tcp_create_openreq_child starts the child at snd_una = snd_nxt =
        snt_isn + 1 and tcp_fastopen_create_child queues nothing (6.1 and 6.18),
        so the child may send a whole initial window before the SYN-ACK is
        acknowledged. The model keeps that SYN-ACK in `flights` for its RTT
        sample (tcp_synack_rtt_meas) and leaves it out here.
        """
        if not self.tfo_child:
            return len(self.flights)
        return sum(1 for f in self.flights if f.data or f.seq != 0)

    @property
    def readable(self) -> bool:
        return bool(self.rcv_buf) or bool(self.pre_read) or self.fin_received

    @property
    def readable_bytes(self) -> int:
        """What the application's next read() returns (backlog.py: copied early, then queued)."""
        return len(self.pre_read) + len(self.rcv_buf)

    def set_rcvlowat(self, value: int) -> None:
        """setsockopt(SO_RCVLOWAT): tcp_set_rcvlowat (net/ipv4/tcp.c) keeps the mark and
        makes room for it. Where the window the mark needs is more than sk_rcvbuf gives,
        sk_rcvbuf grows to hold it (6.18: tcp_space_from_win, by the scaling ratio; 6.1:
        twice the mark) and the window clamp becomes the mark (6.1 always; 6.18 where a
        clamp exists and is smaller, which it is after the handshake whenever the buffer
        grows). tfo-echo-client --read-whole sets a mark that needs more after the
        handshake, except as a Fast Open client, whose mark goes in before its SYN: from
        6.6 there is no clamp to raise yet (tp->window_clamp is 0 until
        tcp_connect_init), so only the buffer grows, and the SYN's window is chosen from
        it (before 6.6 the clamp would pick the SYN's window scale: domain.py)."""
        self.rcvlowat = max(value, 1)
        space = self.rspace
        needed = space.space_from_win(value)
        if needed <= space.rcvbuf:
            return
        space.rcvbuf = needed
        if self.state is TcpState.CLOSED:
            assert space.rules.scaling_ratio, "before 6.6 the raise sets the SYN's clamp"
            space.initial_window(peer_timestamps_seen=False)
            return
        space.window_clamp = max(space.window_clamp, value)

    @property
    def epollin_ready(self) -> bool:
        """Would the kernel wake a reader now (tcp_data_ready, tcp_poll)? tcp_epollin_ready
        (include/net/tcp.h, 6.1 and 6.18) with sk_rcvlowat: the unread bytes reach the mark,
        or the memory nears sk_rcvbuf (tcp_rmem_pressure: above 7/8 of it), or the peer has
        at most one rcv_mss of window left (tcp_receive_window), where waiting for more
        could wait for ever; a FIN makes the socket readable too (RCV_SHUTDOWN)."""
        if self.fin_received and not self.fin_read:
            return True
        avail = len(self.rcv_buf)
        if avail <= 0:
            return False
        space = self.rspace
        window_left = max(space.rcv_wnd - self.unacked_received_bytes, 0)
        return (
            avail >= self.rcvlowat
            or space.rmem > space.rcvbuf - (space.rcvbuf >> 3)
            or window_left <= self.ack.rcv_mss
        )

    @property
    def receive_queue_empty(self) -> bool:
        """No data and no FIN waiting for recv() (the kernel's sk_rmem_alloc == 0).

        A FIN's skb stays queued, and charged to the socket, until recv()
        returns end of file on it (tcp_recvmsg: found_fin_ok).
        """
        return not self.rcv_buf and (not self.fin_received or self.fin_read)

    @property
    def unacked_received_bytes(self) -> int:
        """Bytes received since the last ACK left (rcv_nxt - rcv_wup)."""
        return self.rcv_nxt - self.rcv_wup

    def next_deadline(self) -> int | None:
        """The next instant (ns) this socket needs its timer handler run, if any."""
        return self.delack_fire_ns

    # ------------------------------------------------------------ time
    @property
    def clock(self) -> JiffyClock:
        """The jiffies clock this socket's connection sees (Env.clock_of)."""
        return self.env.clock_of(self.connection)[0]

    def jiffies(self, now: int) -> int:
        return self.clock.jiffies(now)

    def timer_fires_at(self, expires: int, now: int) -> int:
        """When a timer this socket sets now for jiffies `expires` runs (clock.py)."""
        clock, offset = self.env.clock_of(self.connection)
        late = self.env.timer_lateness_ns(self.connection)
        return clock.timer_fires_at(expires, now, offset) + late

    def wheel_timer(self, now: int, expires: int) -> tuple[int, int]:
        """A timer-wheel timer set now for jiffies `expires`: when it fires (its
        connection's ticks and buckets, Env.clock_of) and its bucket's width in ticks,
        remembered for note_wheel_race (a pushed timer too: its old bucket was one
        the arrival could have met)."""
        clock = self.clock
        fire_ns = self.timer_fires_at(expires, now)
        width = clock.wheel_granularity(expires, now)
        self.wheel_deadlines.append((fire_ns, width))
        return fire_ns, width

    def note_wheel_race(self, now: int) -> None:
        """A segment arrives inside the bucket of this socket's latest level-1 timer:
        which comes first, the timer or the segment, depends on where the bucket's
        edges sit (Env.wheel_races)."""
        tick_ns = self.env.clock.tick_ns
        if any(
            width > 1 and abs(fire_ns - now) < width * tick_ns
            for fire_ns, width in self.wheel_deadlines
        ):
            self.env.wheel_race(self.connection)

    def oow_rate_limited(self, now: int, last: int | None) -> bool:
        """__tcp_oow_rate_limited: did an answer to an invalid segment leave less than
        tcp_invalid_ratelimit before `now` (`last`, in jiffies; None: never)?"""
        limit = self.env.clock.ms_to_jiffies(TCP_INVALID_RATELIMIT_MS)
        return last is not None and 0 <= self.jiffies(now) - last < limit

    def rto_jiffies(self) -> int:
        """icsk_rto: __tcp_set_rto's srtt + rttvar, rounded up to jiffies."""
        if self.rtt is None:
            return self.env.clock.ns_to_jiffies_up(RTO_INIT_NS)
        return self.env.clock.ns_to_jiffies_up(self.rtt.rto_us * NS_PER_US)

    def srtt_jiffies(self) -> int | None:
        if self.srtt_ns is None:
            return None
        return self.env.clock.ns_to_jiffies_up(self.srtt_ns)

    @property
    def srtt_ns(self) -> int | None:
        """The smoothed RTT (tp->srtt_us >> 3), in ns; None before the first sample."""
        return None if self.rtt is None else self.rtt.srtt_us * NS_PER_US

    @property
    def rtt_samples(self) -> int:
        return len(self.rtt_history)

    def rtt_sample(self, sample_ns: int) -> None:
        """tcp_ack_update_rtt -> tcp_rtt_estimator, with snd_una already moved by the ACK
        that gave the sample (tcp_ack updates it before tcp_clean_rtx_queue)."""
        self.min_rtt_ns = sample_ns if self.min_rtt_ns is None else min(self.min_rtt_ns, sample_ns)
        ends_round = self.rtt_seq is not None and self.snd_una > self.rtt_seq
        # the kernel's sample is the model's round trip plus its host's time: at least a us
        sample = RttSample(sample_ns // NS_PER_US + HOST_US, ends_round)
        self.rtt_history.append(sample)
        if self.rtt is None:
            self.rtt = rtt_estimator.first(sample.rtt_us)
        else:
            self.rtt = rtt_estimator.update(self.rtt, sample)
        if self.rtt_seq is None or ends_round:
            self.rtt_seq = self.snd_nxt
        self.rto_backoff = 0  # tcp_ack_update_rtt: icsk_backoff = 0 with a valid sample

    # ------------------------------------------------------------ the timeline
    def note(self, now: int, text: str, caused_by: int | None = None, cause: str = "") -> int:
        """Record a Note on this socket's connection and side; returns its id."""
        return self.env.recorder.note(
            now,
            iteration=self.iteration,
            connection=self.connection,
            side=self.side,
            text=text,
            cause=cause,
            caused_by=caused_by,
        ).id

    def timer(
        self,
        now: int,
        deadline: int,
        *,
        name: str,
        action: TimerAction,
        explanation: str,
        cause: str,
        caused_by: int | None,
        race: bool = False,
        unless_merged: bool = False,
        spread_ticks: int = 1,
    ) -> int:
        """Record a Timer on this socket's connection and side; returns its id."""
        return self.env.recorder.timer(
            now,
            deadline,
            iteration=self.iteration,
            connection=self.connection,
            side=self.side,
            name=name,
            action=action,
            explanation=explanation,
            cause=cause,
            caused_by=caused_by,
            race=race,
            unless_merged=unless_merged,
            spread_ticks=spread_ticks,
        ).id

    def count(self, counter: str) -> None:
        """Bump a TcpExt counter, unless this is the unmeasured warm-up."""
        self.env.count(counter, self.counting)
