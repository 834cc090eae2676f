"""The timeline model: two Linux TCP endpoints, a delayed link, a discrete-event loop.

Pure and deterministic: no sockets, no asyncio, no wall clock; time is a
number passed in. `simulate()` runs one ScenarioConfig and returns the
timeline (segments, application calls, timers, notes, each with a time, an
explanation and its cause), a prediction per measured iteration built from
the simulated critical path, and the predicted TcpExt counter deltas.
"""

from tfolab.model.events import AppCall, CookieInfo, Event, Note, Segment, Timer
from tfolab.model.predict import Accuracy, IterationPrediction
from tfolab.model.scenario import ScenarioConfig
from tfolab.model.simulation import ModelInputError, Simulation, simulate

__all__ = [
    "Accuracy",
    "AppCall",
    "CookieInfo",
    "Event",
    "IterationPrediction",
    "ModelInputError",
    "Note",
    "ScenarioConfig",
    "Segment",
    "Simulation",
    "Timer",
    "simulate",
]
