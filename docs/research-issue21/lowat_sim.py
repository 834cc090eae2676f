import dataclasses
from tests.model.scenarios import scenario
from tfolab.model import Segment, simulate
from tfolab.model.rcv_space import receive_memory_for
for rel in [(6,1),(6,18)]:
    mem = receive_memory_for(rel, 131072, 6291456 if rel==(6,1) else 33554432)
    for rw in (False, True):
        cfg = dataclasses.replace(scenario("delack", "nodelay").config, response_bytes=4344, mtu=1500, read_whole=rw)
        sim = simulate(cfg, one_way_delay_ms=10, iterations=3, receive_space_bytes=mem.rmem_max, receive_memory=mem, hz=250)
        acks = [(e.iteration, e.ack, e.window, round(e.sent_ms,1)) for e in sim.events if isinstance(e, Segment) and e.sender=="client" and not e.length and "SYN" not in e.flags]
        print(rel, rw, acks)
