"""How a captured segment parts from the model's, typed, and each kind in plain words.

Rules:
- One frozen type per kind of disagreement; a consumer asks the kind, never
  the sentence: `Changed` (the kernel sent another segment where the model
  has one), `Missing` (the model's segment the kernel did not send), `Extra`
  (the kernel's segment the model lacks), `WrongWindow` (the same segment
  advertising another window), `Arrival` (the same segment outside its own
  time band), `CaptureLost` (the capture dropped segments: nothing can be said
  of them), `LinkHeld` (beside a connection's TCP disagreements: the delay
  backend measured itself holding that connection's segments longer than its
  error allows before them, so the link was not the one the model was asked for).
- Only `Arrival` is about time alone (`timing_only`): a host that held a CPU
  can cause it; everything else is TCP.
- `sentence()` is the only wording of each kind; the JSON's `packet_diff`, the
  CLI, the TUI and the ladder all show these sentences. `to_json()` gives the
  kind and the facts beside the sentence (DESIGN.md, "Contracts"), among them
  the model's event the disagreement is about (`event`, an id of the
  timeline), so nobody finds it again by its words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tfolab.lab.packet_rows import Row
from tfolab.model.events import Side


@dataclass(frozen=True)
class Moment:
    """When a segment arrived, on one side's clock: from its iteration's start where that
    is known, else from the scenario's first measured call."""

    ms: float
    iteration: int | None = None

    def words(self) -> str:
        if self.iteration is None:
            return f"at {self.ms:.2f} ms"
        return f"{self.ms:.2f} ms into iteration {self.iteration}"

    def to_json(self) -> dict[str, Any]:
        return {"ms": round(self.ms, 3), "iteration": self.iteration}


def _where(row: Row) -> str:
    return f"connection {row.connection}, {row.sender}"


def model_event(row: Row) -> int | None:
    """The id of the model's event a model row states: its Segment, or for a race's other
    outcome (no segment of its own) the race's Timer; None for a captured row."""
    if row.event_id is not None:
        return row.event_id
    return row.race_group or None


def _facts(
    kind: str, sentence: str, model: Row | None, kernel: Row | None, **more: Any
) -> dict[str, Any]:
    """A disagreement's JSON: its kind, where, the segments on each side (the model's with
    its event id), the facts of its kind and its sentence."""
    row = model or kernel
    assert row is not None
    data: dict[str, Any] = {"kind": kind, "connection": row.connection, "sender": row.sender}
    if model is not None:
        data |= {"model": model.words(), "event": model_event(model)}
    if kernel is not None:
        data["kernel"] = kernel.words()
    return data | more | {"sentence": sentence}


@dataclass(frozen=True)
class Changed:
    model: Row
    kernel: Row
    at: Moment  # the kernel's segment's arrival

    kind = "changed"
    timing_only = False

    def sentence(self) -> str:
        return (
            f"{_where(self.model)}: the kernel sent {self.kernel.words()} {self.at.words()} "
            f"where the model has {self.model.words()}"
        )

    def to_json(self) -> dict[str, Any]:
        return _facts(self.kind, self.sentence(), self.model, self.kernel, at=self.at.to_json())


@dataclass(frozen=True)
class Missing:
    model: Row
    at: Moment  # when the model has it arrive

    kind = "missing"
    timing_only = False

    def sentence(self) -> str:
        return (
            f"{_where(self.model)}: the model has {self.model.words()} {self.at.words()}; "
            "the kernel sent no such segment"
        )

    def to_json(self) -> dict[str, Any]:
        return _facts(self.kind, self.sentence(), self.model, None, at=self.at.to_json())


@dataclass(frozen=True)
class Extra:
    kernel: Row
    at: Moment

    kind = "extra"
    timing_only = False

    def sentence(self) -> str:
        return (
            f"{_where(self.kernel)}: the kernel sent {self.kernel.words()} {self.at.words()}; "
            "the model has no such segment"
        )

    def to_json(self) -> dict[str, Any]:
        return _facts(self.kind, self.sentence(), None, self.kernel, at=self.at.to_json())


@dataclass(frozen=True)
class WrongWindow:
    model: Row
    kernel: Row
    window: int  # the kernel's window field
    allowed: tuple[int | None, ...]  # the model's, and what its races allow
    at: Moment

    kind = "window"
    timing_only = False

    def sentence(self) -> str:
        said = " or ".join(str(w) for w in self.allowed)
        return (
            f"{_where(self.model)}: {self.model.words()} advertised window {self.window} "
            f"{self.at.words()}; the model says {said}"
        )

    def to_json(self) -> dict[str, Any]:
        return _facts(
            self.kind,
            self.sentence(),
            self.model,
            self.kernel,
            window=self.window,
            allowed=list(self.allowed),
            at=self.at.to_json(),
        )


@dataclass(frozen=True)
class Arrival:
    """The same segment, arriving further from the model's time than its own band."""

    model: Row
    kernel: Row
    iteration: int
    kernel_ms: float  # from the iteration's start, on the capture's clock
    model_ms: float  # from the iteration's start, on the model's clock
    band_ms: float
    # how late the delay backend released the segments on its path, as it measured that
    # (model_ms includes it)
    backend_late_ms: float = 0.0
    # how much longer than the model the applications took to make the calls on its path
    # after the segments that woke them, as they stamped them (model_ms includes it)
    apps_late_ms: float = 0.0

    kind = "arrival"
    timing_only = True

    @property
    def late_ms(self) -> float:
        """How far outside the band (negative: early)."""
        off = self.kernel_ms - self.model_ms
        return off - self.band_ms if off > 0 else off + self.band_ms

    def sentence(self) -> str:
        return (
            f"{_where(self.model)}: {self.model.words()} arrived {self.kernel_ms:.2f} ms into "
            f"iteration {self.iteration}; the model said {self.model_ms:.2f} ms "
            f"± {self.band_ms:.2f}{self._backend_words()}"
        )

    def _backend_words(self) -> str:
        return "".join(
            _moved_words(ms, what)
            for ms, what in (
                (self.backend_late_ms, "the delay backend was measured late"),
                (self.apps_late_ms, "the applications took beyond the model to wake and call"),
            )
        )

    def to_json(self) -> dict[str, Any]:
        return _facts(
            self.kind,
            self.sentence(),
            self.model,
            self.kernel,
            iteration=self.iteration,
            kernel_ms=round(self.kernel_ms, 3),
            model_ms=round(self.model_ms, 3),
            band_ms=round(self.band_ms, 3),
            backend_late_ms=round(self.backend_late_ms, 3),
            apps_late_ms=round(self.apps_late_ms, 3),
        )


def _moved_words(ms: float, what: str) -> str:
    """' (with the 2.10 ms <what> on its path)', or less it on the start's; '' for none."""
    if abs(ms) < 0.005:
        return ""
    if ms < 0:  # the start's path was the later one
        return f" (less the {-ms:.2f} ms {what} on the iteration's start's path)"
    return f" (with the {ms:.2f} ms {what} on its path)"


@dataclass(frozen=True)
class CaptureLost:
    """Segments the capture's ring dropped: the comparison cannot speak for them."""

    count: int

    kind = "capture-lost"
    timing_only = False

    def sentence(self) -> str:
        return f"the capture lost {self.count} segments"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "count": self.count, "sentence": self.sentence()}


@dataclass(frozen=True)
class LinkHeld:
    """A side's segments on a connection that disagrees about TCP, held by the delay
    backend longer than its error and the model's band for each allow before the
    first disagreement, as the backend
    measured them (CapturedRow.late_ms: the NFQUEUE delayer's own record, or netem's
    from each segment's TSval): the link was not the one the model was asked for, and a
    timer the held segments let expire (a loss probe, a retransmission) is the link's
    doing. It names the cause beside the disagreements; it excuses none of them."""

    connection: int
    sender: Side
    segments: int
    most_ms: float
    first: Moment  # the first held segment's arrival
    error_ms: float  # the backend's own per-packet error (Accuracy)

    kind = "link-held"
    timing_only = False

    def sentence(self) -> str:
        return (
            f"connection {self.connection}, {self.sender}: the delay backend held "
            f"{self.segments} of its segments up to {self.most_ms:.2f} ms beyond the delay, "
            f"the first arriving {self.first.words()}, each sent before the kernel parted "
            f"from the model (measured per segment; beyond its error of {self.error_ms:g} ms "
            "and the model's band for each): the link was not the one the model was asked "
            "for, so what TCP did after it is not evidence either way"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "connection": self.connection,
            "sender": self.sender,
            "segments": self.segments,
            "most_ms": round(self.most_ms, 3),
            "first": self.first.to_json(),
            "sentence": self.sentence(),
        }


Disagreement = Changed | Missing | Extra | WrongWindow | Arrival | CaptureLost | LinkHeld
