"""The application scripts: the measuring client and the line-mode echo server.

Rules (they mirror native/src/lib/client.c and server.c):
- The client is blocking. rr: connect()+write() (or sendto(MSG_FASTOPEN), or
  TCP_FASTOPEN_CONNECT then connect()+write()), read the whole response,
  close(). wwr: connect(), then per round [TCP_CORK on] write(first,
  [MSG_MORE]) write(second) [TCP_CORK off] (or one write), read the echo.
- The server is epoll-driven: when a connection is readable it optionally sets
  TCP_QUICKACK, makes one recv() of everything queued, and answers every
  complete line (its echo, or a line of response_bytes); on end of file it
  closes.
- Applications take no time: they run at the instant the kernel wakes them,
  after the kernel has finished with the segment that woke them and with
  every other segment arriving in the same instant (a burst sent back to back
  is read at once: World._last_of_burst); at D = 0 the one exception is a
  reader the loop lets take its socket at a lock point (loop.py, backlog.py),
  whose next read returns what it copied there with what came after.
- The client records each iteration's headline start and end events:
  rr: connect()/sendto() -> first response byte (later rounds on a kept
  connection: write -> first byte), or its last byte where response_bytes is
  set; wwr: first write -> last byte of the answer.
- The client script moves through ClientPhase: IDLE, CONNECTING (its first
  call blocks until the handshake ends), READING (rounds of write and read),
  DONE (closed). The scripts act on the socket through TcpEndpoint's calls
  and read its state from `ep.sock`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from tfolab.model.endpoint import TcpEndpoint
from tfolab.model.fastopen import CookieCache, SynPlan, plan_client_syn
from tfolab.model.predict import Headline
from tfolab.model.scenario import ScenarioConfig
from tfolab.model.state import TcpState

# The client's connect()/sendto() has returned once its socket left these states.
_CONNECTING = frozenset({TcpState.CLOSED, TcpState.SYN_SENT})
# accept() returns a socket in none of these (or a Fast Open child, at once).
_NOT_ACCEPTABLE = frozenset({TcpState.LISTEN, TcpState.SYN_RECV, TcpState.CLOSED})


ALPHABET = bytes(range(65, 91))  # A-Z


def line_bytes(length: int, tag: int) -> bytes:
    """A recognisable line of `length` bytes ending in '\\n' (tag picks the letters):
    the alphabet from letter `tag` on, over and over."""
    start = tag % len(ALPHABET)
    cycle = ALPHABET[start:] + ALPHABET[:start]
    body_length = length - 1
    body = cycle * (body_length // len(cycle)) + cycle[: body_length % len(cycle)]
    return body + b"\n"


def answer_size(config: ScenarioConfig) -> int:
    """The bytes of one answer: to the request line (rr) or to the round's two writes."""
    if config.pattern == "wwr":
        return config.answer_bytes(config.first_write_bytes + config.second_write_bytes)
    return config.answer_bytes(config.request_bytes)


class ClientPhase(enum.Enum):
    IDLE = "idle"  # not started
    CONNECTING = "connecting"  # connect()/sendto() blocks until the handshake ends
    READING = "reading"  # the rounds: write the request or line, read the answer
    DONE = "done"  # close() called


@dataclass
class ClientScript:
    ep: TcpEndpoint
    config: ScenarioConfig
    cache: CookieCache
    rounds: list[int]  # the iteration numbers this connection runs (0 = warm-up)
    headlines: dict[int, Headline]
    on_done: Callable[[int, int | None], None]
    on_round: Callable[[int], None]
    phase: ClientPhase = ClientPhase.IDLE
    round_index: int = 0
    expected: bytes = b""
    got: int = 0
    big_mark: int = 0  # a mark the buffer must grow for, set once the request is written
    sent_lines: list[bytes] = field(default_factory=list)

    @property
    def iteration(self) -> int:
        return self.rounds[self.round_index]

    @property
    def done(self) -> bool:
        return self.phase is ClientPhase.DONE

    def call(self, now: int, call: str, detail: str, why: str, caused_by: int | None) -> int:
        sock = self.ep.sock
        return sock.env.recorder.app(
            now,
            iteration=sock.iteration,
            connection=sock.connection,
            side="client",
            call=call,
            detail=detail,
            explanation=why,
            cause="the client script",
            caused_by=caused_by,
        ).id

    def headline(self) -> Headline:
        return self.headlines.setdefault(self.iteration, Headline())

    def start(self, now: int, caused_by: int | None) -> None:
        cfg = self.config
        self.on_round(self.iteration)
        answer = answer_size(cfg)
        # the warm-up reads as it always does; a mark above half the buffer waits for the
        # handshake (_expect), as tfo-echo-client --read-whole does, except a Fast Open
        # client's: its answer may arrive right behind the SYN-ACK
        fits = 2 * answer <= self.ep.sock.rspace.rcvbuf
        if cfg.read_whole and self.iteration != 0 and (fits or cfg.client_fastopen != "off"):
            caused_by = self.call(
                now,
                "setsockopt",
                f"SO_RCVLOWAT {answer}",
                "read each answer whole: wake the read only once all of it is in",
                caused_by,
            )
            self.ep.sock.set_rcvlowat(answer)
        if cfg.pattern == "wwr" or cfg.client_fastopen == "off":
            plan = plan_client_syn(
                sysctl=cfg.fastopen_sysctl,
                cache=self.cache,
                request_bytes=cfg.request_bytes,
                mtu=cfg.mtu,
                use_fastopen=False,
            )
            event = self.call(
                now, "connect", "blocking", "connect(): send a SYN, wait for the SYN-ACK", caused_by
            )
            self._first_start(event)
            self.ep.connect(now, plan, self.cache, write_pending=False, caused_by=event)
            self.phase = ClientPhase.CONNECTING
            return
        request = self._next_request()
        plan = plan_client_syn(
            sysctl=cfg.fastopen_sysctl,
            cache=self.cache,
            request_bytes=len(request),
            mtu=cfg.mtu,
            use_fastopen=True,
            syn_data_linear=self.ep.sock.env.rmem.syn_data_linear,
        )
        if cfg.client_fastopen == "sendto":
            event = self.call(
                now,
                "sendto",
                f"{len(request)} B, MSG_FASTOPEN",
                "sendto(MSG_FASTOPEN): connect + send in one call; blocks until the handshake ends",
                caused_by,
            )
            self._first_start(event)
            self.ep.app_write(now, request, "request", caused_by=event)
            self.ep.connect(
                now, plan, self.cache, write_pending=_data_left(plan, request), caused_by=event
            )
            self.phase = ClientPhase.CONNECTING
            return
        opt = self.call(
            now,
            "setsockopt",
            "TCP_FASTOPEN_CONNECT",
            "the next connect() may defer its SYN",
            caused_by,
        )
        if plan.data_bytes > 0:
            event = self.call(
                now,
                "connect",
                "returns at once",
                "a cookie is cached: connect() returns without a SYN",
                opt,
            )
            self._first_start(event)
            write = self.call(
                now, "write", f"{len(request)} B", "the first write sends the SYN with data", event
            )
            self.ep.app_write(now, request, "request", caused_by=write)
            self.ep.connect(
                now, plan, self.cache, write_pending=_data_left(plan, request), caused_by=write
            )
        else:
            event = self.call(
                now,
                "connect",
                "blocking",
                "no cookie yet: connect() sends a SYN asking for one",
                opt,
            )
            self._first_start(event)
            self.ep.connect(now, plan, self.cache, write_pending=False, caused_by=event)
            self.sent_lines.pop()
        self.phase = ClientPhase.CONNECTING

    def _first_start(self, event_id: int) -> None:
        if self.config.pattern == "rr":
            self.headline().start_id = event_id

    def _next_request(self) -> bytes:
        line = line_bytes(self.config.request_bytes, self.iteration + 3 * len(self.sent_lines))
        self.sent_lines.append(line)
        self._expect(len(line))
        return line

    def _expect(self, message_bytes: int) -> None:
        self.expected = line_bytes(self.config.answer_bytes(message_bytes), self.iteration)
        self.got = 0
        if self.config.read_whole and self.iteration != 0:
            # the mark each read's poll() sets first: the whole answer, again every round;
            # one the buffer must grow for is set where the client sets it, once its
            # request is written (_set_big_mark): the request's own window predates it
            rspace = self.ep.sock.rspace
            if rspace.space_from_win(len(self.expected)) <= rspace.rcvbuf:
                self.ep.sock.set_rcvlowat(len(self.expected))
            else:
                self.big_mark = len(self.expected)

    def _set_big_mark(self, now: int, caused_by: int | None) -> int | None:
        """The first read's setsockopt(SO_RCVLOWAT) where tcp_set_rcvlowat grows the buffer."""
        if not self.big_mark:
            return caused_by
        mark, self.big_mark = self.big_mark, 0
        event = self.call(
            now,
            "setsockopt",
            f"SO_RCVLOWAT {mark}",
            "read the answer whole: sk_rcvbuf grows to hold it, the window clamp to the mark",
            caused_by,
        )
        self.ep.sock.set_rcvlowat(mark)
        return event

    @property
    def connect_returns(self) -> bool:
        """Is a blocked connect() or sendto() now free to return (the handshake is done)?"""
        return self.phase is ClientPhase.CONNECTING and self.ep.sock.state not in _CONNECTING

    @property
    def _returns_from_fastopen(self) -> bool:
        """Is the blocked call a Fast Open sendto() or write() (which sends only what the
        SYN did not carry), not a connect() that the request follows?"""
        sock = self.ep.sock
        return bool(sock.syn_data or (self.config.client_fastopen != "off" and sock.write_pending))

    @property
    def sends_on_return(self) -> bool:
        """Will the woken connect() or sendto() send data as it returns (_connected)?"""
        if self.config.pattern == "rr" and self._returns_from_fastopen:
            return bool(self.ep.sock.unsent)
        return True

    def wake(self, now: int, caused_by: int | None) -> None:
        if self.connect_returns:
            self._connected(now, caused_by)
        if self.phase is ClientPhase.READING:
            self._read(now, caused_by)

    def _connected(self, now: int, caused_by: int | None) -> None:
        cfg = self.config
        sock = self.ep.sock
        self.phase = ClientPhase.READING
        if cfg.pattern == "wwr":
            self.call(
                now, "connect", "returns", "connect() returns: the handshake is done", caused_by
            )
            self._round(now, caused_by)
            return
        if self._returns_from_fastopen:
            if sock.unsent:
                self.ep.push(
                    now,
                    cause="sendto() continues with the rest after the handshake",
                    caused_by=caused_by,
                )
            call = "sendto" if cfg.client_fastopen == "sendto" else "write"
            event = self.call(
                now, call, "returns", f"{call}() returns: the handshake is done", caused_by
            )
            self._set_big_mark(now, event)
            return
        resent = self.ep.sock.total_retrans
        why = (
            "connect() returns after SYN -> SYN-ACK (2D)"
            if not resent
            else f"connect() returns as the SYN-ACK arrives, after {resent} SYN timeout(s) "
            "(tcp_retransmit_timer): the SYN was sent again"
        )
        ret = self.call(now, "connect", "returns", why, caused_by)
        request = self._next_request()
        write = self.call(
            now, "write", f"{len(request)} B", "the request goes after the handshake", ret
        )
        self.ep.app_write(now, request, "request", caused_by=write)
        self._set_big_mark(now, write)

    def _round(self, now: int, caused_by: int | None) -> None:
        cfg = self.config
        self.ep.sock.iteration = self.iteration
        self.on_round(self.iteration)
        if cfg.pattern == "rr":
            request = self._next_request()
            write = self.call(
                now,
                "write",
                f"{len(request)} B",
                "the next request on the same connection",
                caused_by,
            )
            self.headline().start_id = write
            self.ep.app_write(now, request, "request", caused_by=write)
            self._set_big_mark(now, write)
            return
        line = line_bytes(cfg.first_write_bytes + cfg.second_write_bytes, self.iteration)
        self.sent_lines.append(line)
        self._expect(len(line))
        self._calls(now, caused_by, self._round_calls(line))

    def _round_calls(self, line: bytes) -> list[Callable[[int, int | None], int]]:
        """A write-write-read round's calls before the read, each one system call."""
        cfg = self.config
        first, second = line[: cfg.first_write_bytes], line[cfg.first_write_bytes :]
        calls: list[Callable[[int, int | None], int]] = []

        def cork(on: bool) -> Callable[[int, int | None], int]:
            def call(now: int, previous: int | None) -> int:
                if on:
                    event = self.call(
                        now, "setsockopt", "TCP_CORK 1", "cork: hold partial segments", previous
                    )
                    self.headline().start_id = event
                else:
                    event = self.call(
                        now, "setsockopt", "TCP_CORK 0", "uncork: send what is queued", previous
                    )
                self.ep.set_cork(now, on, event)
                return event

            return call

        def write(data: bytes, name: str, why: str, more: bool) -> Callable[[int, int | None], int]:
            def call(now: int, previous: int | None) -> int:
                flag = ", MSG_MORE" if more else ""
                event = self.call(now, "write", f"{len(data)} B{flag}", why, previous)
                self.headline().start_id = self.headline().start_id or event
                self.ep.app_write(now, data, name, msg_more=more, caused_by=event)
                return event

            return call

        if cfg.cork:
            calls.append(cork(True))
        if cfg.single_write:
            calls.append(write(line, "line", "one write of the whole line", False))
        else:
            calls.append(write(first, "write 1", "first write (no newline yet)", cfg.msg_more))
            calls.append(write(second, "write 2", "second write, ends the line", False))
        if cfg.cork:
            calls.append(cork(False))
        if self.big_mark:

            def mark(now: int, previous: int | None) -> int:
                event = self._set_big_mark(now, previous)
                assert event is not None
                return event

            calls.append(mark)
        return calls

    def _calls(
        self, now: int, caused_by: int | None, calls: list[Callable[[int, int | None], int]]
    ) -> None:
        """Make the calls one system call at a time: each after the kernel's work so far.

        On loopback without a delay a segment is received, and answered, inside
        the system call that sent it (the softirq runs as the sender's
        dev_queue_xmit re-enables bottom halves, and the peer's answer waits in
        the sender's backlog until its release_sock): so the next call comes
        after all of that, as the next application turn at the same instant.
        """
        previous = calls[0](now, caused_by)
        if len(calls) > 1:
            env = self.ep.sock.env
            assert env.call_app_at is not None

            def next_call(t: int) -> None:
                # the call returned once the segments it sent were answered (at D = 0)
                answered = env.recorder.last_arrival(
                    self.ep.sock.connection, "client", previous, t / 1e6
                )
                self._calls(t, answered, calls[1:])

            env.call_app_at(now, next_call)

    def take(self, now: int, caused_by: int, cleanup_until: int | None = None) -> None:
        """At a lock point (loop.py): the blocked read() takes the socket (backlog.py).

        Woken from connect() or sendto() by the SYN-ACK instead, the client holds the
        socket from inet_wait_for_connect's lock_sock until the call's release_sock:
        sendto() sends the rest of its data meanwhile, and the read comes after.
        """
        if self.connect_returns:
            self.ep.hold_for_connect(now, caused_by)
            self._connected(now, caused_by)
            return
        # read_whole: poll() returned, and the recv() after it is MSG_DONTWAIT
        self.ep.take(
            now,
            blocking=not self.config.read_whole,
            caused_by=caused_by,
            cleanup_until=cleanup_until,
        )

    def _read(self, now: int, caused_by: int | None) -> None:
        if not self.ep.sock.readable_bytes:
            return
        if self.config.read_whole and not self.ep.sock.pre_read and not self.ep.sock.epollin_ready:
            return  # poll() sleeps on: tcp_poll does not report the socket readable yet
        before, queued = self.got, self.ep.sock.readable_bytes
        detail = f"{queued} B"
        if before == 0:
            detail += ", first response byte"
        if before + queued >= len(self.expected):
            detail += ", response complete"
        # The read first: an ACK that tcp_cleanup_rbuf sends is the read's doing.
        event = self.call(now, "read", detail, "the client reads the response", caused_by)
        self.got += len(self.ep.app_read(now, event))
        if self.config.read_whole and 0 < self.got < len(self.expected):
            # woken before the whole answer (its window closed): the mark drops to the rest
            self.ep.sock.set_rcvlowat(len(self.expected) - self.got)
        headline = self.headline()
        if not self.config.headline_to_last_byte and before == 0:
            headline.end_id = event
        if self.got < len(self.expected):
            return
        if self.config.headline_to_last_byte:
            headline.end_id = event
        if self.round_index + 1 < len(self.rounds):
            self.round_index += 1
            self._round(now, event)
            return
        close = self.call(now, "close", "", "close(): the connection is done (FIN)", event)
        self.ep.app_close(now, close)
        self.phase = ClientPhase.DONE
        self.on_done(now, close)


@dataclass
class ServerScript:
    ep: TcpEndpoint
    config: ScenarioConfig
    app: dict[str, int] | None = None  # counts "accepted" and "requests" (None: not counted)
    accepted: bool = False
    closed: bool = False
    inbuf: bytearray = field(default_factory=bytearray)
    waiting_note: bool = False
    # its TCP_QUICKACK already ran for the recv() to come (set_quickack_early)
    quickack_set: bool = False

    def call(self, now: int, call: str, detail: str, why: str, caused_by: int | None) -> int:
        sock = self.ep.sock
        return sock.env.recorder.app(
            now,
            iteration=sock.iteration,
            connection=sock.connection,
            side="server",
            call=call,
            detail=detail,
            explanation=why,
            cause="the server's epoll loop",
            caused_by=caused_by,
        ).id

    def wake(self, now: int, caused_by: int | None) -> None:
        ep, sock = self.ep, self.ep.sock
        if self.closed:
            return
        if not self.accepted:
            if not self.acceptable:
                return
            caused_by = self._accept(now, caused_by)
        if not sock.readable:
            return
        caused_by = self._quickack(now, caused_by)
        if sock.readable_bytes:
            # The read first: an ACK that tcp_cleanup_rbuf sends is the read's doing.
            caused_by = self.call(
                now, "read", f"{sock.readable_bytes} B", "recv() of everything queued", caused_by
            )
            self.inbuf += ep.app_read(now, caused_by)
            self._answer(now, caused_by)
        if sock.fin_received and not sock.readable_bytes:
            eof = self.call(now, "read", "0 B (end of file)", "the client closed", caused_by)
            ep.app_read(now, eof)
            close = self.call(now, "close", "", "the server closes its side", eof)
            ep.app_close(now, close)
            self.closed = True

    @property
    def acceptable(self) -> bool:
        """Would accept() return this socket now (a Fast Open child, or the handshake done)?"""
        sock = self.ep.sock
        return sock.tfo_child or sock.state not in _NOT_ACCEPTABLE

    def _accept(self, now: int, caused_by: int | None) -> int:
        self.accepted = True
        if self.app is not None:
            self.app["accepted"] += 1
        why = (
            "accept(): a Fast Open child, readable before the handshake ends"
            if self.ep.sock.tfo_child
            else "accept(): the handshake is complete"
        )
        return self.call(now, "accept", "", why, caused_by)

    def take(self, now: int, caused_by: int, cleanup_until: int | None = None) -> None:
        """At a lock point (loop.py): the epoll loop's recv() takes the socket early
        (backlog.py), after its TCP_QUICKACK where asked, as before every recv(). On a
        socket whose handshake ACK woke accept() in the same burst, accept() comes
        first, and with nothing queued yet it is accept() that holds the socket.
        `cleanup_until`: the recv()'s tcp_cleanup_rbuf runs late (endpoint.take)."""
        if not self.accepted:
            caused_by = self._accept(now, caused_by)
            if not self.ep.sock.rcv_buf:
                self.ep.hold_for_accept(now, caused_by)
                return
        quickack = self._quickack(now, caused_by)
        self.ep.take(
            now,
            blocking=False,
            caused_by=caused_by if quickack is None else quickack,
            cleanup_until=cleanup_until,
        )

    def hold_in_accept(self, now: int, caused_by: int) -> None:
        """At an "accept" point (loop.py): woken by the handshake's ACK, accept() holds
        the new socket while the client's segments arrive, with some of them queued
        already; the epoll loop's recv() reads them all after it."""
        self.ep.hold_for_accept(now, self._accept(now, caused_by))

    def set_quickack_early(self, now: int, caused_by: int) -> None:
        """At a "quickack" point (loop.py): woken by a segment while more of the
        burst arrives, the epoll loop has run its setsockopt(TCP_QUICKACK) already,
        and its recv() comes after those segments (its turn, which sets it no more)."""
        self._quickack(now, caused_by)
        self.quickack_set = True

    def _quickack(self, now: int, caused_by: int | None) -> int | None:
        """setsockopt(TCP_QUICKACK, 1) before a recv(), unless it already ran for that one."""
        if not self.config.server_quickack:
            return caused_by
        if self.quickack_set:
            self.quickack_set = False
            return caused_by
        caused_by = self.call(
            now, "setsockopt", "TCP_QUICKACK 1", "set before every recv()", caused_by
        )
        self.ep.set_quickack(now, caused_by)
        return caused_by

    def _answer(self, now: int, caused_by: int) -> None:
        name = "echo" if self.config.pattern == "wwr" else "response"
        while b"\n" in self.inbuf:
            end = self.inbuf.index(b"\n") + 1
            line = bytes(self.inbuf[:end])
            del self.inbuf[:end]
            self.waiting_note = False
            if self.app is not None:
                self.app["requests"] += 1
            if self.config.response_bytes:  # the answer is not the line itself
                name = "response"
                line = line_bytes(self.config.answer_bytes(len(line)), len(line))
            write = self.call(
                now, "write", f"{len(line)} B", f"a whole line arrived: send the {name}", caused_by
            )
            self.ep.app_write(now, line, name, caused_by=write)
        if self.inbuf and not self.waiting_note:
            self.waiting_note = True
            self.ep.sock.note(
                now,
                f"the line is not complete ({len(self.inbuf)} B, no newline yet): "
                "the line-mode server waits for the rest before answering",
                caused_by,
            )


def _data_left(plan: SynPlan, request: bytes) -> bool:
    """Whether a blocking sendto()/write() still has data to send after the SYN.

    tcp_send_syn_data clears fastopen_req->data when the whole request fits in
    the SYN ("No more data pending in inet_wait_for_connect()"), so
    __inet_stream_connect's writebias, and with it sk_write_pending, is 0: the
    client then ACKs the SYN-ACK at once (tcp_rcv_synsent_state_process). With
    no cookie, or a request larger than the SYN can carry, data is left and
    the ACK waits for it.
    """
    return plan.data_bytes < len(request)
