"""Research: connect() time with the first N SYNs dropped (nft quota), D via tfo-delay (OUTPUT)."""
import socket, subprocess, sys, time
from tfolab.core import native
from tfolab.runner.backends import nfrule
from tfolab.runner.backends.nfqueue import delayer_args
delay = float(sys.argv[1]); drops = int(sys.argv[2]); mode = sys.argv[3] if len(sys.argv) > 3 else "syn"
subprocess.run(["ip", "link", "set", "lo", "up", "mtu", "1500"], check=True)
open("/proc/sys/net/ipv4/tcp_fastopen", "w").write("3")
d = subprocess.Popen(delayer_args(str(native.executable_path("tfo-delay")), delay), stdout=subprocess.PIPE, text=True)
assert d.stdout.readline().strip() == "READY"
nfrule.install_rule(nfrule.QUEUE_NUMBER)
match = "tcp flags & (syn|ack) == syn" + (" ip length > 100" if mode == "syndata" else "")
subprocess.run(["nft", "add table ip drops"], check=True)
subprocess.run(["nft", "add chain ip drops out { type filter hook prerouting priority -10 ; }"], check=True)
subprocess.run(["nft", f"add rule ip drops out iif lo {match} quota until {60 * drops if mode == 'syn' else 100000} bytes counter drop"], check=True)
ls = socket.socket(); ls.setsockopt(socket.IPPROTO_TCP, socket.TCP_FASTOPEN, 16); ls.bind(("127.0.0.1", 0)); ls.listen()
port = ls.getsockname()[1]
import threading
def serve():
    while True:
        c, _ = ls.accept(); c.recv(100); c.sendall(b"y" * 100); time.sleep(0.2); c.close()
threading.Thread(target=serve, daemon=True).start()
def netstat():
    lines = open("/proc/net/netstat").read().splitlines()
    k, v = lines[0].split()[1:], lines[1].split()[1:]
    return dict(zip(k, map(int, v)))
for i in range(int(sys.argv[4]) if len(sys.argv) > 4 else 1):
    before = netstat()
    c = socket.socket()
    if mode == "syndata":
        c.setsockopt(socket.IPPROTO_TCP, 30, 1)
    t = time.monotonic()
    c.connect(("127.0.0.1", port))
    c.sendall(b"x" * 100)
    got = c.recv(1000)
    el = (time.monotonic() - t) * 1000
    after = netstat()
    delta = {k: after[k] - before[k] for k in after if after[k] != before[k] and k in ("TCPTimeouts", "TCPSynRetrans", "TCPFastOpenActiveFail", "TCPFastOpenActive", "TCPFastOpenBlackhole", "TCPFastOpenCookieReqd", "TCPLossProbes")}
    print(f"{mode} drops={drops} D={delay}: request->response {el:.1f} ms; {delta}")
    c.close(); time.sleep(0.5)
print(subprocess.run(["nft", "list ruleset"], capture_output=True, text=True).stdout.split("counter")[1].split("drop")[0])
d.terminate()
