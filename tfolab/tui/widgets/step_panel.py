"""The current step: what happened, to whom, when, and why.

Rules:
- Shows one event of the timeline: its position ("step 7 of 23"), time,
  iteration and side, the model's one-line explanation, and its cause (with
  the step that caused it, found through `caused_by`).
- Text only, built from the event; it never changes the step itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from tfolab.model.events import AppCall, Event, Note, Segment, Timer


def _who(event: Event) -> str:
    if isinstance(event, Segment):
        return f"{event.sender} → {event.receiver}"
    return event.side


def _headline(event: Event) -> str:
    if isinstance(event, Segment):
        arrive = f", arrives {event.arrived_ms:.1f} ms" if event.arrived_ms != event.sent_ms else ""
        return f"{event.label()}{arrive}"
    if isinstance(event, AppCall):
        return f"{event.call}() {event.detail}".strip()
    if isinstance(event, Timer):
        return f"{event.name} timer {event.action} (deadline {event.deadline_ms:.1f} ms)"
    assert isinstance(event, Note)
    return "note"


def describe_step(events: Sequence[Event], index: int, status: str = "") -> Text:
    """The panel's text for events[index]."""
    if not events:
        return Text("No events: the scenario did nothing.")
    event = events[index]
    text = Text()
    when = "setup" if event.iteration == 0 else f"iteration {event.iteration}"
    text.append(f"Step {index + 1} of {len(events)}", style="bold")
    text.append(f" · {event.time_ms:.1f} ms · {when} · {_who(event)}", style="dim")
    if status:
        text.append(f"  {status}", style="italic")
    text.append("\n")
    text.append(_headline(event), style="bold")
    text.append("\n")
    text.append(event.explanation)
    if event.cause:
        text.append("\nwhy: ", style="bold")
        text.append(event.cause)
    if event.caused_by is not None:
        by_id = {e.id: position for position, e in enumerate(events)}
        position = by_id.get(event.caused_by)
        if position is not None:
            cause = events[position]
            text.append(f"\n     ← step {position + 1}: {_headline(cause)}", style="dim")
    return text


class StepPanel(Static):
    """The explanation of the highlighted step, beside the ladder."""

    text: Text = Text()

    def show(self, events: Sequence[Event], index: int, status: str = "") -> None:
        self.text = describe_step(events, index, status)
        self.update(self.text)
