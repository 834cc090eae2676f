"""Which CPU receives lo's packets in a fresh lab namespace (for tests/runner/test_receive_order.py
and tests/netem/test_netem_receive_order.py).

argv: "plain" (lo as the kernel makes it), "steer" (receive_order.steer_lo_to_one_cpu),
"netem" or "nfqueue" (that backend installed as a run installs it, at 1 ms). Behind NFQUEUE
the receiving CPU is the delayer's, whose verdict runs the receiver: there only the map
says which backlog the packets queue in. For each CPU this
process may use, a thread pinned there connects to a listener and sends; the accepted
socket's SO_INCOMING_CPU says which CPU received the data. Prints one JSON object:
{"receiving": {sender cpu: receiving cpu}, "map": lo's rps_cpus or the refusal}.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading

from tfolab.core import native
from tfolab.runner import netns, receive_order
from tfolab.runner.backends import install_delay

SO_INCOMING_CPU = 49  # asm-generic/socket.h


def received_on(listener: socket.socket, sender_cpu: int) -> int:
    def send() -> None:
        os.sched_setaffinity(0, {sender_cpu})
        with socket.create_connection(listener.getsockname()) as conn:
            conn.sendall(b"order")
            conn.recv(1)  # until the listener's side closes

    thread = threading.Thread(target=send)
    thread.start()
    accepted, _ = listener.accept()
    with accepted:
        assert accepted.recv(16) == b"order"
        cpu = accepted.getsockopt(socket.SOL_SOCKET, SO_INCOMING_CPU)
    thread.join()
    return int(cpu)


def main(how: str) -> None:
    netns.enter_new_netns()
    netns.set_loopback(True)
    if how == "steer":
        receive_order.steer_lo_to_one_cpu(receive_order.receiving_cpu())
    elif how in ("netem", "nfqueue"):
        installed = install_delay(how, 1.0, native.optional_executable("tfo-delay"))
    try:
        steering = receive_order.steered_cpus()
    except OSError as refused:
        steering = f"refused: {refused}"
    with socket.create_server(("127.0.0.1", 0)) as listener:
        cpus = sorted(os.sched_getaffinity(0))
        receiving = {cpu: received_on(listener, cpu) for cpu in cpus}
    if how in ("netem", "nfqueue"):
        installed.stop()
    print(json.dumps({"receiving": receiving, "map": steering}))


if __name__ == "__main__":
    main(sys.argv[1])
