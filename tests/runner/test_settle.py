"""The measured part waits for the warm-up's connection to end (runner/settle.py): real
sockets in a fresh network namespace, whose /proc/net/tcp holds only this test's.

Why: in CI's emulated VM a 300 kB transfer counted one TCPLossProbes and one
DelayedACKLost in the measured part while its capture of the measured connections held
no probe and no duplicate (fuzzer seed 2026, transfer long at D = 5.22 ms): the warm-up's
connection, still ending, was inside it."""

from __future__ import annotations

import socket

from tests.native.netns import run_in_netns
from tfolab.runner import settle

TCP_ESTABLISHED = 0x01


def _one_connection_closed_in_turn() -> tuple[list[int], bool, list[int], bool, bool]:
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    accepted, _ = listener.accept()
    open_while_up = sorted(settle.open_states())
    over_while_up = settle.wait_until_over(0.05)
    client.close()  # FIN_WAIT2 on the client's side, CLOSE_WAIT on the server's
    half_closed = sorted(settle.open_states())
    over_half_closed = settle.wait_until_over(0.05)
    accepted.close()  # the server's FIN: the client to TIME_WAIT, the server's socket gone
    over = settle.wait_until_over(2.0)
    listener.close()
    return open_while_up, over_while_up, half_closed, over_half_closed, over


def test_only_listeners_and_time_wait_count_as_over() -> None:
    up, over_up, half, over_half, over = run_in_netns(_one_connection_closed_in_turn)
    assert up == [TCP_ESTABLISHED, TCP_ESTABLISHED] and not over_up
    assert half and TCP_ESTABLISHED not in half and not over_half  # FIN_WAIT2, CLOSE_WAIT
    assert over


def _a_fin_behind_a_full_window() -> tuple[bool, bool, list[int], bool]:
    """The client closes with data the server has not read yet queued before its FIN: the
    FIN waits behind a zero window (FIN_WAIT1) until the server reads."""
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    accepted, _ = listener.accept()
    accepted.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    client.close()
    half_closed = settle.wait_until_fins_acked(0.05) and not settle.wait_until_over(0.05)
    client = socket.create_connection(listener.getsockname())
    reader, _ = listener.accept()
    client.setblocking(False)
    try:
        while True:
            client.send(b"x" * 65536)
    except BlockingIOError:
        pass
    client.close()  # FIN_WAIT1, its FIN behind what the server's window cannot take
    fin_waits = sorted(settle.open_states())
    acked_while_full = settle.wait_until_fins_acked(0.2)
    reader.setblocking(False)
    try:
        while reader.recv(1 << 20):
            pass
    except BlockingIOError:
        pass
    reader.settimeout(5.0)
    while reader.recv(1 << 20):  # until the FIN: end of file
        pass
    acked = settle.wait_until_fins_acked(2.0)
    for sock in (accepted, reader, listener):
        sock.close()
    return half_closed, acked_while_full, fin_waits, acked


def test_the_capture_waits_only_for_unacknowledged_fins() -> None:
    """wait_until_fins_acked ignores a half-closed connection (FIN_WAIT2, CLOSE_WAIT:
    every FIN acknowledged) and waits for a FIN still unacknowledged (FIN_WAIT1)."""
    half_closed, acked_while_full, fin_waits, acked = run_in_netns(_a_fin_behind_a_full_window)
    assert half_closed
    assert settle.TCP_FIN_WAIT1 in fin_waits and not acked_while_full
    assert acked
