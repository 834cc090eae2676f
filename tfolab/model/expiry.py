"""A retransmission timer's expiry: the fired timer drawn, and what every expiry counts.

Rules (Linux 6.1 and 6.18 alike: tcp_timer.c tcp_retransmit_timer,
tcp_write_timeout; inet_connection_sock.c reqsk_timer_handler):
- Every expiry of a retransmission timer counts TCPTimeouts: the connected
  socket's (tcp_retransmit_timer), the SYN's (the same timer in SYN_SENT) and
  a request's SYN-ACK timer (tcp_syn_ack_timeout, a Fast Open child's too).
- Only tcp_retransmit_timer goes through tcp_write_timeout, which gives the
  socket a new transmit hash (sk_rethink_txhash; net.core.txrehash is on by
  default, and every connected socket has one): TcpTimeoutRehash. A request's
  SYN-ACK timer does not, nor a Fast Open child's (tcp_retransmit_timer hands
  it to tcp_fastopen_synack_timer and returns before tcp_write_timeout).
"""

from __future__ import annotations

from tfolab.model.sock import TcpSock


def expired(
    sock: TcpSock,
    now: int,
    explanation: str,
    caused_by: int,
    *,
    spread_ticks: int = 1,
    name: str = "rto",
) -> int:
    """A retransmission timer runs: the fired timer drawn under `name` ("rto", "syn",
    "synack"), TCPTimeouts counted, and TcpTimeoutRehash where it is
    tcp_retransmit_timer's. Returns the Timer's id."""
    fired = sock.timer(
        now,
        now,
        name=name,
        action="fired",
        explanation=explanation,
        cause="the timer expired",
        caused_by=caused_by,
        spread_ticks=spread_ticks,
    )
    sock.count("TCPTimeouts")
    if name != "synack":
        write_timeout(sock)
    return fired


def write_timeout(sock: TcpSock) -> None:
    """tcp_retransmit_timer -> tcp_write_timeout: sk_rethink_txhash, TcpTimeoutRehash."""
    sock.count("TcpTimeoutRehash")
