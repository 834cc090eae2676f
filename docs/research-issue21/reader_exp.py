"""Research: are the receiver's ACK windows of a big response deterministic with a
reader that waits for the whole answer (SO_RCVLOWAT), and not with one that reads as
data arrives?  Run in a fresh netns: unshare -n python reader_exp.py D BYTES MODE RUNS
MODE: plain (recv as data arrives) | lowat (SO_RCVLOWAT = BYTES before the request)."""
from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import threading
import time

from tfolab.core import native
from tfolab.runner.backends import nfrule
from tfolab.runner.backends.nfqueue import delayer_args

ETH_P_ALL = 3


def main() -> None:
    delay, size, mode, runs = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    subprocess.run(["ip", "link", "set", "lo", "up", "mtu", os.environ.get("MTU", "1500")], check=True)
    # lo steered to CPU 0 as the backend does
    from tfolab.runner import receive_order
    receive_order.steer_lo_to_one_cpu(receive_order.receiving_cpu())
    delayer = None
    if delay > 0:
        delayer = subprocess.Popen(delayer_args(str(native.executable_path("tfo-delay")), delay),
                                   stdout=subprocess.PIPE, text=True)
        assert delayer.stdout is not None and delayer.stdout.readline().strip() == "READY"
        nfrule.install_rule(nfrule.QUEUE_NUMBER)
    listener = socket.socket()
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]

    def serve() -> None:
        for _ in range(runs):
            conn, _ = listener.accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
            conn.recv(100)
            conn.sendall(b"x" * size)
            time.sleep(0.2 + 4 * delay / 1000)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    sigs = []
    for _ in range(runs):
        cap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        cap.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)  # SO_RCVBUFFORCE
        cap.bind(("lo", 0))
        cap.settimeout(0.0)
        client = socket.socket()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
        if mode == "lowat":
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, size)
        start = time.monotonic()
        client.connect(("127.0.0.1", port))
        client_port = client.getsockname()[1]
        client.sendall(b"get\n")
        got = 0
        reads = 0
        while got < size:
            chunk = client.recv(size)
            if not chunk:
                break
            got += len(chunk)
            reads += 1
        done = time.monotonic()
        time.sleep(0.1 + 4 * delay / 1000)
        client.close()
        time.sleep(0.05)
        rows = []
        while True:
            try:
                data, addr = cap.recvfrom(70000)
            except BlockingIOError:
                break
            if addr[2] != socket.PACKET_OUTGOING:
                continue
            ip = data[14:]
            ihl = (ip[0] & 15) * 4
            total = struct.unpack("!H", ip[2:4])[0]
            tcp = ip[ihl:]
            sport, dport, seq, ack = struct.unpack("!HHII", tcp[:12])
            off = (tcp[12] >> 4) * 4
            flags = tcp[13]
            win = struct.unpack("!H", tcp[14:16])[0]
            plen = total - ihl - off
            if client_port not in (sport, dport):
                continue
            who = "S" if sport == port else "C"
            rows.append((who, flags, plen, win))
        cap.close()
        # client's ACK windows (and the server's segments' sizes)
        sig = tuple(r for r in rows)
        sigs.append(sig)
        cl = [r[3] for r in rows if r[0] == "C"]
        sv = [r[2] for r in rows if r[0] == "S" and r[2]]
        print("  server skbs:", len(sv), sum(sv), sorted(set(sv)))
        print(f"{mode} D={delay} {size}: {1000*(done-start):.1f} ms reads {reads} "
              f"server skbs {len(sv)} client pkts {len(cl)} wins {cl}")
    print("distinct signatures:", len(set(sigs)), "of", runs)
    if delayer is not None:
        delayer.terminate()


if __name__ == "__main__":
    main()
