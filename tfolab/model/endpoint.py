"""One TCP socket as the applications and the loop see it: their calls in, segments out.

Rules:
- TcpEndpoint holds the socket's record (`sock`, sock.py) and is what the
  scripts (apps.py), the loop (loop.py) and the tests act through: a segment
  arriving, the timer, the application's calls. Each method hands over to the
  functions that own the rule: handshake.py, receive.py, output.py,
  delack_timer.py. Those never import this module, so the imports form a DAG.
- Callers read the socket on `sock` (state, queues, ACK state); the one field
  they write is `sock.iteration`, the label of the events, moved on per round.
- h11/aioquic style: every entry point takes `now` (integer ns); the socket
  never looks at a clock of its own. Timers are deadlines the loop watches.
- The link is loopback with a fixed delay and no loss, so segments arrive in
  order; there is no retransmission timer. Congestion and receive windows
  never limit these scripts (at most 3 segments in flight), so neither is
  modelled; cwnd, SACK and window scaling appear as options only.
- Application calls follow net/ipv4/tcp.c: a write queues its bytes and
  pushes (tcp_sendmsg -> tcp_push; TCP_CORK and MSG_MORE are Nagle's business,
  nagle.py); a read drains the receive queue and may ACK at once
  (tcp_recvmsg -> tcp_cleanup_rbuf); TCP_QUICKACK leaves pingpong and runs
  tcp_cleanup_rbuf(sk, 1) (__tcp_sock_set_quickack), which ACKs before the read
  when more than one full segment is unacknowledged; close() queues the FIN
  after the data (tcp_close).
"""

from __future__ import annotations

from tfolab.model import backlog, delack_timer, handshake, output
from tfolab.model.events import Side
from tfolab.model.fastopen import CookieCache, FastOpenServer, SynDecision, SynPlan
from tfolab.model.flights import WriteMark
from tfolab.model.receive import receive_segment
from tfolab.model.sock import TcpSock
from tfolab.model.state import TcpState
from tfolab.model.wire import Env, Wire


class TcpEndpoint:
    """A client or server socket: the calls that change it. Its state is `self.sock`."""

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
        self.sock = TcpSock(
            env,
            side=side,
            connection=connection,
            iteration=iteration,
            mtu=mtu,
            nodelay=nodelay,
            counting=counting,
        )

    # ------------------------------------------------------------ from the loop
    def receive(self, now: int, wire: Wire) -> None:
        """A segment from the peer arrives (not a SYN at the listener: see accept_syn)."""
        receive_segment(self.sock, now, wire)

    def on_timer(self, now: int) -> None:
        """The delayed-ACK timer's deadline came (a stale deadline does nothing)."""
        delack_timer.fire(self.sock, now)

    def next_deadline(self) -> int | None:
        """The next instant (ns) `on_timer` must run, if any."""
        return self.sock.next_deadline()

    # ------------------------------------------------------------ opening
    def connect(
        self,
        now: int,
        plan: SynPlan,
        cache: CookieCache,
        *,
        write_pending: bool,
        caused_by: int | None,
    ) -> int:
        """Send the SYN (with data already written, when the plan says so)."""
        self.sock.app_busy_until_ns = now + self.sock.env.app_reaction_ns
        return handshake.connect(
            self.sock, now, plan, cache, write_pending=write_pending, caused_by=caused_by
        )

    def accept_syn(
        self,
        now: int,
        wire: Wire,
        decision: SynDecision,
        fastopen_queue: FastOpenServer | None = None,
        *,
        lab_ends_first: bool = False,
    ) -> int:
        """The listener got `wire` (a SYN); this socket becomes its child and answers."""
        return handshake.accept_syn(
            self.sock, now, wire, decision, fastopen_queue, lab_ends_first=lab_ends_first
        )

    # ------------------------------------------------------------ application calls
    def app_write(
        self, now: int, data: bytes, name: str, *, msg_more: bool = False, caused_by: int | None
    ) -> None:
        """write()/send(): queue the bytes (named `name` on the wire) and push."""
        sock = self.sock
        sock.app_busy_until_ns = now + sock.env.app_reaction_ns  # then it blocks in read()
        sock.marks.append(WriteMark(sock.write_seq, sock.write_seq + len(data), name))
        sock.msg_more = msg_more
        cause = f"the application wrote {name}"
        output.write(sock, now, data, msg_more=msg_more, cause=cause, caused_by=caused_by)
        if not sock.can_send_data():
            return
        output.push(sock, now, cause=cause, caused_by=caused_by)

    def push(self, now: int, *, cause: str, caused_by: int | None) -> bool:
        """tcp_push of what is queued (a blocked sendto() resuming after the handshake)."""
        return output.push(self.sock, now, cause=cause, caused_by=caused_by)

    def set_cork(self, now: int, on: bool, caused_by: int | None) -> None:
        """setsockopt(TCP_CORK): uncorking pushes what is queued."""
        self.sock.cork = on
        if not on:
            output.push(self.sock, now, cause="TCP_CORK cleared", caused_by=caused_by)

    def app_read(self, now: int, caused_by: int | None) -> bytes:
        """read()/recv() of everything queued; tcp_cleanup_rbuf may ACK at once.

        Bytes a reader copied early (`take`) come first; a MSG_DONTWAIT reader
        already ran tcp_cleanup_rbuf for them, so only what was queued since counts.
        """
        sock = self.sock
        early, acked = bytes(sock.pre_read), sock.pre_read_acked
        sock.pre_read.clear()
        sock.pre_read_acked = False
        queued = self._copy(now)
        data = early + queued
        sock.fin_read = sock.fin_received  # a recv() that reaches the FIN consumes it
        if not (acked and not queued):
            self.cleanup_rbuf(now, len(queued) if acked else len(data), caused_by)
        return data

    def _copy(self, now: int) -> bytes:
        """tcp_recvmsg's copy: the receive queue to the application, its memory freed."""
        sock = self.sock
        data = bytes(sock.rcv_buf)
        sock.rcv_buf.clear()
        sock.read_at_ns, sock.read_freed = now, sock.rspace.rmem
        sock.unread_edge = None
        sock.rspace.read_all()
        sock.app_busy_until_ns = now + sock.env.app_reaction_ns
        sock.delivered += data
        return data

    def take(
        self, now: int, *, blocking: bool, caused_by: int, cleanup_until: int | None = None
    ) -> None:
        """A woken reader takes the socket (lock_sock) and copies what is queued (backlog.py).

        A MSG_DONTWAIT recv() stops at the end of the queue and runs tcp_cleanup_rbuf
        now, or, with `cleanup_until` (a "cleanup" point, loop.py), once the segment
        ending there has joined the backlog (`late_cleanup`); a blocking read() flushes
        the backlog first (at `release`).
        """
        sock = self.sock
        owner = backlog.own(sock, blocking=blocking)
        queued = len(sock.rcv_buf)
        owner.read_event = sock.note(
            now,
            f"the {sock.side}'s {'read()' if blocking else 'recv()'} takes the socket and "
            f"copies the {queued} B queued; what its peer sends meanwhile waits in the "
            "backlog until release_sock (a race: the reader runs on the other CPU while "
            "its peer's segments still arrive)",
            caused_by,
            "a reader woken on the other CPU",
        )
        sock.pre_read += self._copy(now)
        if not blocking:
            owner.recv = True
            sock.pre_read_acked = True  # by the time anything reads again, it has run
            if cleanup_until is None:
                self.cleanup_rbuf(now, queued, owner.read_event)
            else:
                owner.cleanup_until, owner.cleanup_copied = cleanup_until, queued

    def late_cleanup(self, now: int) -> None:
        """The held recv()'s tcp_cleanup_rbuf, run late (a "cleanup" point, loop.py): the
        segments that came during its copy wait in the backlog, charged to
        sk_backlog.len, so its ACK offers a window less their truesize (tcp_space; 6.1
        and 6.18: with timeo 0 tcp_recvmsg_locked ends its loop without flushing the
        backlog, runs tcp_cleanup_rbuf, and release_sock processes the backlog after)."""
        sock = self.sock
        owner = sock.owner
        if owner is None or owner.cleanup_until is None:
            return
        owner.cleanup_until = None
        waiting = sum(len(wire.payload) for wire in owner.backlog)
        event = sock.note(
            now,
            f"the {sock.side}'s recv() ends its copy of {owner.cleanup_copied} B only now: "
            f"{waiting} B joined the backlog meanwhile, so tcp_cleanup_rbuf offers a window "
            f"less what they are charged, {sock.rspace.backlog} B (tcp_space subtracts "
            "sk_backlog.len; a race: the copy on the other CPU outlasted their arrival)",
            owner.read_event,
            "a reader on the other CPU",
        )
        self.cleanup_rbuf(now, owner.cleanup_copied, event)

    def hold_for_accept(self, now: int, caused_by: int) -> None:
        """accept() holds the new socket (inet_accept: lock_sock, then __inet_accept
        grafts it, release_sock) while its peer's segments still arrive (backlog.py)."""
        self._hold(
            now,
            "accept() holds the new socket (inet_accept: lock_sock, __inet_accept, "
            "release_sock); what the client sends meanwhile waits in the backlog until "
            "release_sock (a race: the server runs while the client's segments arrive)",
            caused_by,
            "the server's accept() on the other CPU",
        )

    def hold_for_connect(self, now: int, caused_by: int) -> None:
        """The client woken by the SYN-ACK holds its socket: inet_wait_for_connect takes
        it (lock_sock) and the connect() or sendto() releases it as it returns
        (inet_stream_connect, tcp_sendmsg: release_sock), after sending what is left
        of a sendto()'s data (backlog.py)."""
        self._hold(
            now,
            "the client, woken by the SYN-ACK, holds its socket until its connect or "
            "send call returns (inet_wait_for_connect: lock_sock; release_sock); what the "
            "server sends meanwhile waits in the backlog (a race: the client runs while "
            "the server's segments arrive)",
            caused_by,
            "the client's call on the other CPU",
        )

    def hold_for_answer(self, now: int, caused_by: int) -> None:
        """The server's send() of its answer holds the socket (tcp_sendmsg: lock_sock ...
        release_sock) while loopback's softirq runs inside it (dev_queue_xmit re-enables
        bottom halves): what arrives meanwhile waits in the backlog (backlog.py)."""
        self._hold(
            now,
            "the server's send() still holds the socket (tcp_sendmsg: lock_sock, then "
            "release_sock) while loopback delivers its answer inside the call "
            "(dev_queue_xmit re-enables bottom halves: the softirq runs here); what "
            "arrives meanwhile waits in the backlog",
            caused_by,
            "the server's send() on this CPU",
        )

    def _hold(self, now: int, text: str, caused_by: int, cause: str) -> None:
        """A call other than a read holds the socket (lock_sock): it copies nothing."""
        owner = backlog.own(self.sock, blocking=False)
        owner.read_event = self.sock.note(now, text, caused_by, cause)

    def stop_copying(self, now: int, *, cleanup_first: bool = True) -> int:
        """A blocking read() that holds the socket ended its copy loop before the segment
        arriving now (tcp_recvmsg_locked, 6.1 and 6.18: copied >= target with no
        sk_backlog.tail), so its tcp_cleanup_rbuf runs for what it copied, and
        release_sock, not the read, processes what waits in the backlog (backlog.py).

        `cleanup_first`: tcp_cleanup_rbuf ran before the segment came (a "stopped"
        point). Else (a "cleanup" point) the segment joined the backlog between the
        loop's look and tcp_cleanup_rbuf: the caller runs it after tcp_add_backlog, and
        its ACK offers a window less the segment's truesize (tcp_space subtracts
        sk_backlog.len). Returns the note's event, the ACK's cause."""
        sock = self.sock
        owner = sock.owner
        assert owner is not None and owner.blocking
        owner.blocking = False
        sock.pre_read_acked = True
        then = (
            "tcp_cleanup_rbuf runs now and what arrives next waits for release_sock (a race: "
            "the segment came microseconds after that look)"
            if cleanup_first
            else "the segment arriving now waits in the backlog, and tcp_cleanup_rbuf, "
            "running after it came, offers a window less its truesize (tcp_space subtracts "
            "sk_backlog.len; a race: it came between that look and tcp_cleanup_rbuf)"
        )
        event = sock.note(
            now,
            f"the {sock.side}'s read() ended its copy loop with {len(sock.pre_read)} B: the "
            f"backlog was still empty when it looked (tcp_recvmsg_locked), so {then}",
            owner.read_event,
            "a reader on the other CPU",
        )
        if cleanup_first:
            self.cleanup_rbuf(now, len(sock.pre_read), event)
        return event

    def release(self, now: int) -> None:
        """release_sock: the backlog is processed, then tcp_release_cb (backlog.py).

        A blocking read() flushed it from inside its copy loop (__sk_flush_backlog), so
        it copies on what the backlog queued, and only then runs tcp_cleanup_rbuf once
        for everything it copied; a MSG_DONTWAIT recv() returned before the backlog ran.
        """
        sock = self.sock
        self.late_cleanup(now)  # tcp_recvmsg's tcp_cleanup_rbuf comes before its release_sock
        owner = backlog.release(sock, now, lambda wire: receive_segment(sock, now, wire))
        if owner.blocking:
            sock.pre_read += self._copy(now)
            sock.pre_read_acked = True
            self.cleanup_rbuf(now, len(sock.pre_read), owner.read_event)

    def cleanup_rbuf(
        self,
        now: int,
        copied: int,
        caused_by: int | None,
        *,
        drained: bool = True,
        quickack: bool = False,
    ) -> None:
        """__tcp_cleanup_rbuf after `copied` bytes were copied: ACK now?

        `drained`: nothing is queued for recv() (`!sk_rmem_alloc`), as after a read
        of everything; `quickack`: TCP_QUICKACK runs it, not a read.
        """
        sock = self.sock
        rules = sock.env.rules
        why = rules.cleanup_rbuf(sock.ack, copied, sock.unacked_received_bytes, drained)
        if (
            not why
            and copied
            and not sock.fin_received  # RCV_SHUTDOWN: no window worth opening
            and sock.rspace.window_raised(sock.ack.rcv_mss, sock.rcv_nxt - sock.rcv_wup)
        ):
            why = (
                "a window update: the socket can now offer at least twice the window the "
                "peer may still use"
                if quickack
                else "a window update: the read freed enough to at least double the window "
                "the peer may still use"
            )
        if not why:
            return
        if not quickack:
            output.send_ack(
                sock,
                now,
                f"ACK at read: {why} (__tcp_cleanup_rbuf)",
                "the application read",
                caused_by,
            )
            return
        unread = len(sock.rcv_buf)
        window = (
            f", before the read: its window still counts the {unread} B unread" if unread else ""
        )
        output.send_ack(
            sock,
            now,
            f"ACK at TCP_QUICKACK: {why}, so __tcp_sock_set_quickack's "
            f"tcp_cleanup_rbuf(sk, 1) sends it now{window} (net/ipv4/tcp.c, Linux 6.1 to 6.18)",
            "TCP_QUICKACK",
            caused_by,
        )

    def set_quickack(self, now: int, caused_by: int | None) -> None:
        """setsockopt(TCP_QUICKACK, 1): leave pingpong; run tcp_cleanup_rbuf(sk, 1)."""
        sock = self.sock
        interactive = sock.env.rules.in_pingpong(sock.ack)
        established = sock.state in (TcpState.ESTABLISHED, TcpState.CLOSE_WAIT)
        cleanup = sock.env.rules.set_quickack(sock.ack, established)
        if interactive:
            sock.note(now, "TCP_QUICKACK: the server leaves pingpong mode (one-shot)", caused_by)
        if cleanup:
            self.cleanup_rbuf(now, 1, caused_by, drained=sock.receive_queue_empty, quickack=True)

    def app_close(self, now: int, caused_by: int | None) -> None:
        """close(): the FIN follows the queued data."""
        self.sock.fin_requested = True
        output.push(self.sock, now, cause="the application called close()", caused_by=caused_by)
