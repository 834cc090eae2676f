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

from tfolab.model.events import Event
from tfolab.view.steps import headline, when, who


def describe_step(events: Sequence[Event], index: int, status: str = "") -> Text:
    """The panel's text for events[index]."""
    if not events:
        return Text("No events: the scenario did nothing.")
    event = events[index]
    text = Text()
    text.append(f"Step {index + 1} of {len(events)}", style="bold")
    text.append(f" · {event.time_ms:.1f} ms · {when(event)} · {who(event)}", style="dim")
    if status:
        text.append(f"  {status}", style="italic")
    text.append("\n")
    text.append(headline(event), style="bold")
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
            text.append(f"\n     ← step {position + 1}: {headline(cause)}", style="dim")
    return text


class StepPanel(Static):
    """The explanation of the highlighted step, beside the ladder."""

    text: Text = Text()

    def show(self, events: Sequence[Event], index: int, status: str = "") -> None:
        self.text = describe_step(events, index, status)
        self.update(self.text)
