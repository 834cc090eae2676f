"""The current step: what happened, to whom, when, and why.

Rules:
- Shows one event of the timeline: its position ("step 7 of 23"), time,
  iteration and side, the model's one-line explanation, and its cause (with
  the step that caused it, found through `caused_by`).
- A captured segment (the captured or both views) shows what the capture
  says instead: flags, seq, ack, len and options, its arrival (on the
  ladder's clock in the first line, as in the ladder's time column; on the
  capture's own clock, from the scenario's first measured call, below), its
  connection and sender, and whether the model predicted it.
- A step that disagrees with the model shows its packet_diff sentence right
  under the headline (so the panel's height never hides it).
- Text only, built from the view's LadderContent; it never changes the step itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from tfolab.model.events import Event, Segment
from tfolab.tui.widgets.ladder import empty_text
from tfolab.view.captured import CapturedStep, LadderContent, captured_words
from tfolab.view.steps import headline, when, who


def describe_step(
    events: Sequence[Event], index: int, status: str = "", verdict: Text | None = None
) -> Text:
    """The panel's text for events[index]; `verdict` goes right under the headline."""
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
    if verdict is not None:
        text.append_text(verdict)
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


def describe_captured(
    content: LadderContent, index: int, step: CapturedStep, status: str = ""
) -> Text:
    """The panel's text for a captured segment."""
    row = step.row
    text = Text()
    text.append(f"Step {index + 1} of {len(content.events)}", style="bold")
    place = f"iteration {step.iteration}" if step.iteration else "setup"
    receiver = "server" if row.sender == "client" else "client"
    arrived = content.events[index]
    at = ""
    if isinstance(arrived, Segment):
        at = (
            f" · lost, dropped {arrived.arrived_ms:.1f} ms"
            if arrived.lost
            else f" · arrives {arrived.arrived_ms:.1f} ms"
        )
    text.append(
        f" · captured{at} · {place} · {row.sender} → {receiver}",
        style="dim",
    )
    if status:
        text.append(f"  {status}", style="italic")
    text.append("\n")
    text.append(captured_words(row), style="bold")
    text.append("\n")
    text.append_text(_captured_verdict(content, step))
    text.append("\n")
    connection = (
        f"connection {step.connection}"
        if step.connection
        else "a connection whose SYN was not captured (not compared)"
    )
    into = (
        f", {step.into_ms:.2f} ms into {place}"
        if step.into_ms is not None and step.iteration
        else ""
    )
    text.append(
        f"The kernel's segment on {connection}, from the {row.sender}: it arrived on lo "
        f"{row.t_ms:.2f} ms after the scenario's first measured call{into}."
    )
    return text


def _captured_verdict(content: LadderContent, step: CapturedStep) -> Text:
    if step.sentence:
        return Text(f"✗ {step.sentence}", style="bold red")
    if step.model_index is None:
        return Text("not compared with the model", style="dim")
    where = ""
    if content.view == "both":
        # The model's events keep their order among the captured ones.
        model = [i for i in range(len(content.events)) if i not in content.captured]
        if step.model_index < len(model):
            where = f" (step {model[step.model_index] + 1})"
    return Text(f"✓ as the model predicted{where}", style="green")


def describe(content: LadderContent, index: int, status: str = "") -> Text:
    """The panel's text for step `index` of a ladder view."""
    if not content.events:
        return Text(empty_text(content), style="bold")
    index = min(max(index, 0), len(content.events) - 1)
    step = content.captured.get(index)
    if step is not None:
        return describe_captured(content, index, step, status)
    sentence = content.sentences.get(index)
    verdict = Text(f"✗ the kernel: {sentence}", style="bold red") if sentence else None
    return describe_step(content.events, index, status, verdict)


class StepPanel(Static):
    """The explanation of the highlighted step, beside the ladder."""

    text: Text = Text()

    def show(self, content: LadderContent, index: int, status: str = "") -> None:
        self.text = describe(content, index, status)
        self.update(self.text)
