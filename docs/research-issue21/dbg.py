from tests.native.netns import run_in_netns
from tests.native import test_read_whole as t
samples, by_port, st = run_in_netns(t._three_answers, timeout=60.0)
for s in samples: print(s.first_byte_ms if hasattr(s,'first_byte_ms') else '', (s.last_byte_ns-s.first_byte_ns)/1e6, s.error)
for p, sig in by_port.items(): print(p, len(sig), [w for f,w in sig])
print(st)
