"""A captured segment drawn on the ladder like the model's, and how its arrow is labelled.

Rules:
- A KernelSegment is a tfolab.model.events.Segment (what = "captured"), so the
  one layout draws it; what sets it apart is typed, never read off its label:
  `as_model` (in the "both" view, a captured segment that agrees with the
  model's: the same flight, drawn over it as "✓ kernel") and `mark` (a prefix
  before its own label: "✗ " where it disagrees, "kernel " beside the model's).
"""

from __future__ import annotations

from dataclasses import dataclass

from tfolab.model.events import Segment

AS_MODEL_LABEL = "✓ kernel"


@dataclass(frozen=True)
class KernelSegment(Segment):
    as_model: bool = False
    mark: str = ""

    def label(self) -> str:
        if self.as_model:
            return AS_MODEL_LABEL
        return self.mark + super().label()
