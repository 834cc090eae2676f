"""The kernel's TcpExt counters against the model's, in plain words.

Rules:
- Only the counters the model predicts are compared (PREDICTED_COUNTERS); a
  name the model leaves out is predicted at 0. The kernel's other counters
  (TW, TCPPureAcks, ...) are shown, never judged.
- A delayed-ACK timer the model names as a race (Timer.race: it was due within
  the application's reaction time) may fire on a real machine before the
  segment that carried the ACK; each such race may add one DelayedACKs. A
  timer that fires only if its burst's race ACK was not deferred over it
  (Timer.unless_merged) may take one away.
- The server application's own counts (connections accepted, requests
  received, as the echo server reports them) are compared the same way: a
  replayed SYN shows as one request more than the client ever sent.
- Every disagreement is one sentence; an empty list means they agree.
"""

from __future__ import annotations

from tfolab.model import Simulation, Timer
from tfolab.model.simulation import PREDICTED_COUNTERS

# (key in `app`, its verb, its noun): what the server application did
APP_COUNTS = (("accepted", "accepted", "connections"), ("requests", "received", "requests"))


def delayed_ack_races(sim: Simulation) -> int:
    """How many delayed-ACK timers of the measured part may win their race on a real machine."""
    measured = {e.connection for e in sim.events if e.iteration >= 1}
    return sum(
        1 for e in sim.events if isinstance(e, Timer) and e.race and e.connection in measured
    )


def merged_timers(sim: Simulation) -> int:
    """How many delayed-ACK timers of the measured part fire only if their burst's race
    ACK was not deferred over them (Timer.unless_merged): each may take one DelayedACKs."""
    measured = {e.connection for e in sim.events if e.iteration >= 1}
    return sum(
        1
        for e in sim.events
        if isinstance(e, Timer) and e.unless_merged and e.connection in measured
    )


def counter_diff(
    sim: Simulation, measured: dict[str, int], app: dict[str, int] | None = None
) -> list[str]:
    """One sentence per predicted counter the kernel (or the application) moved otherwise."""
    sentences = []
    races, merged = delayed_ack_races(sim), merged_timers(sim)
    for name in PREDICTED_COUNTERS:
        predicted = sim.counters.get(name, 0)
        got = measured.get(name, 0)
        slack = races if name == "DelayedACKs" else 0
        fewer = merged if name == "DelayedACKs" else 0
        if predicted - fewer <= got <= predicted + slack:
            continue
        low, high = predicted - fewer, predicted + slack
        allowed = f"{predicted}" if low == high else f"{low} to {high}"
        sentences.append(f"TcpExt {name} moved by {got}; the model predicted {allowed}")
    for name, verb, noun in APP_COUNTS:
        if app and name in app and app[name] != sim.app.get(name, 0):
            sentences.append(
                f"the server application {verb} {app[name]} {noun}; "
                f"the model predicted {sim.app.get(name, 0)}"
            )
    return sentences
