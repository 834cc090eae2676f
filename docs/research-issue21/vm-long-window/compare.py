"""Compare a saved VM capture of `transfer --scenario long --delay 10` with the model,
as the run did (the VM's 6.1 buffers, netem's accuracy, the run's measured round trip),
and print the disagreements that are not about time.

    .venv/bin/python docs/research-issue21/vm-long-window/compare.py \
        tests/labs/captures/transfer-long-d10-6.1-acks-spread.json
"""

import collections
import json
import sys

import msgspec

from tests.labs import vm_captures
from tfolab.lab import packets
from tfolab.lab.packet_rows import model_starts
from tfolab.lab.prediction import accuracy_for
from tfolab.model.captured import CapturedRow
from tfolab.model.simulation import with_measured_round_trip

data = json.loads(open(sys.argv[1]).read())
rows = msgspec.convert(data["captured"], list[CapturedRow])
sim = vm_captures.model(
    "transfer", "long", {}, delay_ms=data["delay_ms"], iterations=3, accuracy=accuracy_for("netem")
)
sim = with_measured_round_trip(sim, data["round_trip_excess_ms"])
# the iterations' measured starts were not kept: the model's own (times only move)
starts = {i: t for i, t in model_starts(sim).items() if i}
comparison = packets.compare(sim, rows, starts)
print(dict(collections.Counter(type(d).__name__ for d in comparison.disagreements)))
for d in comparison.disagreements:
    if type(d).__name__ != "Arrival":
        print(d.sentence() if hasattr(d, "sentence") else d)
