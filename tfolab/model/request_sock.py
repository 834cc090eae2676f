"""The server's request sock: what the listener remembers of a SYN it answered.

Rules (struct request_sock, struct tcp_request_sock; 6.1 and 6.18):
- num_timeout counts the SYN-ACK timer's expiries, num_retrans every SYN-ACK
  sent again (by that timer, or for a retransmitted SYN: tcp_check_req).
- last_oow_ack_jiffies is the request's own rate limit for SYN-ACKs that answer
  retransmitted SYNs (tcp_openreq_init starts it at 0: never); the timer's
  resends do not touch it.
- first_synack_ns is snt_synack: the first SYN-ACK's time, which the ACK's
  TSecr must echo for tcp_try_undo_spurious_syn to clear the undo marker.
- generation names the armed timer: mod_timer replaces the previous one, so a
  callback whose generation is not the current one is a timer that no longer
  exists.
- fastopen: the request of a Fast Open child (tcp_fastopen_create_child), whose
  timer is the child's own retransmission timer (tcp_fastopen_synack_timer).
- window is the first SYN-ACK's window field, min(rsk_rcv_wnd, 65535): every
  SYN-ACK sent again carries it (tcp_make_synack), whatever a Fast Open child
  advertised since with its answer.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Request:
    first_synack_ns: int
    window: int
    fastopen: bool = False
    num_timeout: int = 0
    num_retrans: int = 0
    last_oow_ack_jiffies: int | None = None
    generation: int = 0
