"""A measurement the machine disturbed: repeated once, on evidence, and said so; never silently.

Rules:
- A scenario's measured part is repeated, once, when every way it missed the
  model is about time alone and late (an iteration above its band, a segment
  that arrived after its own band) and the machine took at least as long as
  its worst miss during the measured part: the lab's threads' waits for a CPU,
  plus the hypervisor's steal of the machine's CPUs (a virtual machine's own
  wait, which no thread of the guest sees; runner/cpu_wait.py), plus the
  latest the NFQUEUE delayer released a packet after its due time in the run
  (its own statistics: a packet released late takes every packet after it
  along). The evidence says the machine took the time. (The whole measured
  part, not one iteration: a connection's last segments arrive while the next
  iteration runs.)
- One repeat at most, and it stands as measured: a rule of the model that is
  wrong misses again, and is reported.
- Nothing else is ever repeated: a miss without that evidence, an early time
  (faster than the model: no wait explains it), or any disagreement about TCP
  (a segment changed, missing or extra, a window, a counter, what the server
  application received) is the answer, not a disturbance.
- A cookie_cache "keep" scenario depends on the scenarios before it, and a
  run without a capture cannot be judged segment by segment: neither is repeated.
- The repeat replaces the scenario's result and the run keeps the evidence
  (LabResult.repeats, a Repeat each): the JSON's `repeats`, the CLI's and the UI's note.
"""

from __future__ import annotations

from tfolab.lab.disagreements import Arrival
from tfolab.lab.results import Repeat, ScenarioResult


def disturbed(scenario: ScenarioResult, delayer_late_ms: float = 0.0) -> Repeat | None:
    """The evidence to measure `scenario` again, or None: it stands as measured.
    `delayer_late_ms`: the latest the run's delayer released a packet after its due time."""
    if scenario.planned.config.cookie_cache == "keep" or scenario.comparison is None:
        return None
    if scenario.counter_diff or scenario.cpu_wait_ms is None:
        return None
    misses: list[tuple[float, int]] = []  # (missed by, iteration)
    for m in scenario.measurements:
        if m.ok is False:
            assert m.measured_ms is not None
            if m.measured_ms < m.expected_ms:
                return None  # early: no wait makes a time shorter
            misses.append((m.off_by_ms, m.i))
    for disagreement in scenario.disagreements:
        if not isinstance(disagreement, Arrival) or disagreement.late_ms < 0:
            return None
        misses.append((disagreement.late_ms, disagreement.iteration))
    if not misses:
        return None
    missed_by, iteration = max(misses)
    if scenario.cpu_wait_ms + scenario.steal_ms + delayer_late_ms < missed_by:
        return None
    return Repeat(
        scenario.planned.name,
        iteration,
        missed_by,
        scenario.cpu_wait_ms,
        scenario.steal_ms,
        delayer_late_ms,
    )
