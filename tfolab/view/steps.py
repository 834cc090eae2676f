"""One step of a timeline in words: who, what, when; shared by the CLI and the UI.

Rules: pure text from a model event, no styles. The TUI's step panel and the
ASCII ladder's step list both describe events through these functions, so a
step reads the same everywhere.
"""

from __future__ import annotations

from tfolab.model.events import AppCall, Event, Note, Segment, Timer


def who(event: Event) -> str:
    if isinstance(event, Segment):
        return f"{event.sender} → {event.receiver}"
    return event.side


def headline(event: Event) -> str:
    if isinstance(event, Segment):
        arrive = (
            f", lost (would arrive {event.arrived_ms:.1f} ms)"
            if event.lost
            else f", arrives {event.arrived_ms:.1f} ms"
            if event.arrived_ms != event.sent_ms
            else ""
        )
        return f"{event.label()}{arrive}"
    if isinstance(event, AppCall):
        return f"{event.call}() {event.detail}".strip()
    if isinstance(event, Timer):
        return f"{event.name} timer {event.action} (deadline {event.deadline_ms:.1f} ms)"
    assert isinstance(event, Note)
    return "note"


def when(event: Event) -> str:
    return "setup" if event.iteration == 0 else f"iteration {event.iteration}"
