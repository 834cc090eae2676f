"""Narrower views of a ladder: the headline path only, and where each iteration starts.

Rules:
- Pure: a LadderContent (tfolab.view.captured) in, a LadderContent out.
- "Headline path only" keeps, for every measured iteration, what happens
  between its headline's start and end (the model's predictions: the first
  and last events of its critical path): segments sent in that window,
  application calls and timers in it, and notes only when they are on the
  critical path. Warm-up (iteration 0), close-down (after the end) and side
  notes go. Captured segments count by their iteration and their time on the
  model's clock, like the model's own.
- Every index-keyed field of the content (roles, path, markers, sentences,
  captured, model_at) is carried over to the kept events' new indexes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from tfolab.lab.results import ScenarioResult
from tfolab.model.events import Event, Note, Segment
from tfolab.view.captured import LadderContent

EPSILON_MS = 1e-6


Window = tuple[float, float, int, frozenset[int]]  # start ms, end ms, end id, path ids


def headline_windows(scenario: ScenarioResult) -> dict[int, Window]:
    """iteration -> (start ms, end ms, the end's id, ids on its critical path), from the model."""
    by_id = {event.id: event for event in scenario.simulation.events}
    windows = {}
    for prediction in scenario.simulation.predictions:
        if not prediction.path:
            continue
        start, end = by_id[prediction.path[0]], by_id[prediction.path[-1]]
        end_ms = end.arrived_ms if isinstance(end, Segment) else end.time_ms
        windows[prediction.i] = (start.time_ms, end_ms, end.id, frozenset(prediction.path))
    return windows


def inside(time_ms: float, event_id: int | None, window: Window) -> bool:
    """Within the headline: from its start to its end; at the end's instant, only what
    happened before the end (the close that follows it is close-down)."""
    start, end, end_id, _ = window
    if time_ms < start - EPSILON_MS or time_ms > end + EPSILON_MS:
        return False
    if abs(time_ms - end) <= EPSILON_MS and event_id is not None:
        return event_id <= end_id
    return True


def _kept(event: Event, windows: dict[int, Window]) -> bool:
    window = windows.get(event.iteration)
    if window is None:
        return False
    if isinstance(event, Note):
        return event.id in window[3]
    return event.id in window[3] or inside(event.time_ms, event.id, window)


def headline_only(content: LadderContent, scenario: ScenarioResult) -> LadderContent:
    """`content` without warm-up, close-down and notes off the critical path."""
    windows = headline_windows(scenario)
    model_ids = {event.id for event in scenario.simulation.events}
    keep = []
    for index, event in enumerate(content.events):
        captured = content.captured.get(index)
        if captured is not None and event.id not in model_ids:
            window = windows.get(captured.iteration)
            if window and inside(event.time_ms, None, window):
                keep.append(index)
        elif _kept(event, windows):
            keep.append(index)
    return reindex(content, keep, title=f"{content.title} · headline path only")


def reindex(content: LadderContent, keep: Sequence[int], *, title: str) -> LadderContent:
    new = {old: number for number, old in enumerate(keep)}
    return dataclasses.replace(
        content,
        title=title,
        events=tuple(content.events[i] for i in keep),
        roles={new[i]: role for i, role in content.roles.items() if i in new},
        path=frozenset(new[i] for i in content.path if i in new),
        markers={new[i]: text for i, text in content.markers.items() if i in new},
        issues={new[i]: issue for i, issue in content.issues.items() if i in new},
        captured={new[i]: step for i, step in content.captured.items() if i in new},
        model_at={m: new[i] for m, i in content.model_at.items() if i in new},
    )


def iteration_starts(events: Sequence[Event]) -> dict[int, int]:
    """iteration -> the index of its first event (steps are in time order)."""
    starts: dict[int, int] = {}
    for index, event in enumerate(events):
        starts.setdefault(event.iteration, index)
    return starts
