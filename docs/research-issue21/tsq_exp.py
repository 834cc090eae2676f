"""Research (not tfolab): does TSQ hold a slow-start flight behind the NFQUEUE delayer?

Run inside a fresh netns: unshare -n /work/main/.venv/bin/python tsq_exp.py HOOK D BYTES [N]
HOOK: output (tfolab's rule today) or prerouting (ingress, after loopback_xmit's orphan).
Prints connect-to-last-byte times and the server's TCP_INFO at the end.
"""

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


def tcp_info(sock: socket.socket) -> dict[str, int]:
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    # struct tcp_info: 8 u8, then u32s
    u32 = struct.unpack_from("=24I", raw, 8)
    names = ["rto", "ato", "snd_mss", "rcv_mss", "unacked", "sacked", "lost", "retrans",
             "fackets", "last_data_sent", "last_ack_sent", "last_data_recv", "last_ack_recv",
             "pmtu", "rcv_ssthresh", "rtt", "rttvar", "snd_ssthresh", "snd_cwnd", "advmss",
             "reordering", "rcv_rtt", "rcv_space", "total_retrans"]
    return dict(zip(names, u32))


def main() -> None:
    hook, delay, size = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    tfo = "tfo" in sys.argv[5:]
    subprocess.run(["ip", "link", "set", "lo", "up", "mtu", os.environ.get("MTU", "1500")], check=True)
    with open("/proc/sys/net/ipv4/tcp_autocorking", "w") as f:
        f.write("0")
    with open("/proc/sys/net/ipv4/tcp_fastopen", "w") as f:
        f.write("3")
    delayer = None
    if hook == "netem":
        subprocess.run(["tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", f"{delay}ms",
                        "limit", "100000"], check=True)
    else:
        delayer = subprocess.Popen(delayer_args(str(native.executable_path("tfo-delay")), delay),
                                   stdout=subprocess.PIPE, text=True)
        assert delayer.stdout is not None and delayer.stdout.readline().strip() == "READY"
        if hook == "prerouting":
            nfrule.NF_INET_LOCAL_OUT = 0  # NF_INET_PRE_ROUTING
            nfrule.NFT_META_OIF = 4  # NFT_META_IIF
        print(nfrule.install_rule(nfrule.QUEUE_NUMBER).way)
    listener = socket.socket()
    # the lab's congestion control, per socket (runner/server.py); the host's default is bbr
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
    if tfo:
        listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_FASTOPEN, 16)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    infos: list[dict[str, int]] = []

    def serve() -> None:
        for _ in range(rounds):
            conn, _ = listener.accept()
            if "bigsndbuf" in sys.argv[5:]:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
            conn.recv(100)
            conn.sendall(b"x" * size)
            time.sleep(0.3)
            infos.append(tcp_info(conn))
            if "ss" in sys.argv[5:]:
                print(subprocess.run(["ss", "-tin", "sport", "=", f":{port}"], capture_output=True, text=True).stdout)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    for _ in range(rounds):
        client = socket.socket()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
        if tfo:
            client.setsockopt(socket.IPPROTO_TCP, 30, 1)  # TCP_FASTOPEN_CONNECT
        start = time.monotonic()
        client.connect(("127.0.0.1", port))
        connected = time.monotonic()
        client.sendall(b"get\n")
        got = 0
        while got < size:
            chunk = client.recv(1 << 20)
            if not chunk:
                break
            got += len(chunk)
        done = time.monotonic()
        print(f"{hook}{' tfo' if tfo else ''} D={delay} {size} B: connect {1000 * (connected - start):.1f} ms, "
              f"last byte {1000 * (done - start):.1f} ms = {(done - start) * 1000 / (2 * delay) if delay else 0:.2f} RTT")
        time.sleep(0.4)
        client.close()
    for info in infos:
        print({k: info[k] for k in ("snd_cwnd", "snd_ssthresh", "rtt", "total_retrans", "unacked")})
    if delayer is not None:
        delayer.terminate()


if __name__ == "__main__":
    main()
