import dataclasses, sys
from tfolab.model import domain, simulation, Segment
domain.refusal = lambda *a, **k: None
simulation.left_domain = lambda world: None
from tests.model.scenarios import scenario
from tfolab.model import simulate
from tfolab.model.rcv_space import receive_memory_for
mem = receive_memory_for((6,18), 131072, 33554432)
size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
cfg = dataclasses.replace(scenario("handshake", "plain").config, response_bytes=size, mtu=1500, read_whole=True)
sim = simulate(cfg, one_way_delay_ms=10, iterations=1, receive_space_bytes=mem.rmem_max, receive_memory=mem, hz=250)
cw = [e.window for e in sim.events if isinstance(e, Segment) and e.sender=="client"]
sv = [e.length for e in sim.events if isinstance(e, Segment) and e.sender=="server" and e.length]
print("client windows", cw)
print("server segs", len(sv), sum(sv))
print("rounds:", sorted({round(e.sent_ms,1) for e in sim.events if isinstance(e, Segment) and e.sender=="server" and e.length}))
print([p.headline_ms if hasattr(p,'headline_ms') else p for p in sim.predictions][:1])
