"""Grading a student's predictions against the model and, after a real run, the kernel.

Rules:
- Pure: predictions (tfolab.lab.expression) and a ScenarioResult in, grades out.
- A quantity's value is the range of the headline over its iterations (the
  model's predicted_ms; after a run, the measured ones). A prediction is right
  when its distance to that range is at most the allowance: the larger of the
  model's band (tolerance_ms), 1 ms and 10 % of the value, the 10 % capped
  at 20 ms, half the shortest delayed ACK (TCP_ATO_MIN, 40 ms): so a
  prediction that leaves out a delayed-ACK stall is wrong at every D.
- Every grade explains itself in words: what was predicted, what the model
  says in D and ms and along which path, and, when wrong, where the two part
  (how many one-way trips, what waits on a timer) with the scenario's own
  summary as the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tfolab.lab.expression import Expression
from tfolab.lab.quantities import Quantity

if TYPE_CHECKING:  # a type only: grading stays importable without the model
    from tfolab.lab.results import ScenarioResult

MIN_ALLOWANCE_MS = 1.0
RELATIVE_ALLOWANCE = 0.10
# Half of TCP_ATO_MIN (HZ/25 jiffies = 40 ms): the relative allowance never
# absorbs a delayed-ACK stall, whatever the delay.
MAX_RELATIVE_ALLOWANCE_MS = 20.0


@dataclass(frozen=True)
class Range:
    low: float
    high: float

    @classmethod
    def of(cls, values: list[float]) -> Range:
        return cls(min(values), max(values))

    def distance(self, value: float) -> float:
        return max(self.low - value, 0.0, value - self.high)

    def prints_as_one(self) -> bool:
        """Both ends print alike at 0.1 ms: 40.36 and 40.44 do, 40.33 and 40.37 do not."""
        return f"{self.low:.1f}" == f"{self.high:.1f}"

    def words(self) -> str:
        """One figure when both ends print alike, else both: 40.33 and 40.37 are
        "40.3-40.4 ms", never "40.3 ms" (which hides the 40.4 measured)."""
        if self.prints_as_one():
            return f"{self.low:.1f} ms"
        return f"{self.low:.1f}-{self.high:.1f} ms"

    def to_json(self) -> list[float]:
        return [round(self.low, 3), round(self.high, 3)]


def allowance(model: Range, band_ms: float) -> float:
    relative = min(RELATIVE_ALLOWANCE * model.high, MAX_RELATIVE_ALLOWANCE_MS)
    return max(band_ms, MIN_ALLOWANCE_MS, relative)


@dataclass(frozen=True)
class QuantityGrade:
    quantity: Quantity
    iterations: tuple[int, ...]
    prediction: Expression
    predicted_ms: float
    model: Range
    model_words: str  # "2D = 20.0 ms: SYN+data, response"
    allowed_ms: float
    model_ok: bool
    sentence: str  # the grade in words, against the model
    measured: Range | None = None
    measured_ok: bool | None = None
    measured_sentence: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "quantity": self.quantity.name,
            "iterations": list(self.iterations),
            "prediction": self.prediction.text,
            "prediction_d": self.prediction.d,
            "prediction_const_ms": self.prediction.ms,
            "predicted_ms": round(self.predicted_ms, 3),
            "model_ms": self.model.to_json(),
            "model_words": self.model_words,
            "allowed_ms": round(self.allowed_ms, 3),
            "model_ok": self.model_ok,
            "measured_ms": self.measured.to_json() if self.measured else None,
            "measured_ok": self.measured_ok,
            "explanation": self.sentence,
            "measured_explanation": self.measured_sentence,
        }


@dataclass(frozen=True)
class Grade:
    """Every quantity of one scenario, graded."""

    quantities: tuple[QuantityGrade, ...] = field(default_factory=tuple)

    @property
    def model_right(self) -> int:
        return sum(1 for q in self.quantities if q.model_ok)

    @property
    def measured_right(self) -> int | None:
        if any(q.measured_ok is None for q in self.quantities) or not self.quantities:
            return None
        return sum(1 for q in self.quantities if q.measured_ok)

    def summary(self) -> str:
        text = f"{self.model_right}/{len(self.quantities)} as the model predicts"
        if self.measured_right is not None:
            text += f", {self.measured_right}/{len(self.quantities)} as measured"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "of": len(self.quantities),
            "model_right": self.model_right,
            "measured_right": self.measured_right,
            "quantities": [q.to_json() for q in self.quantities],
        }


def grade(
    predictions: Mapping[str, Expression],
    quantities: tuple[Quantity, ...],
    scenario: ScenarioResult,
    one_way_delay_ms: float,
    reason: str = "",
) -> Grade:
    """Each quantity's prediction against the model (and the measurement, if there is one).

    `reason` is the scenario's summary: said after a wrong answer.
    """
    by_i = {m.i: m for m in scenario.measurements}
    explained = {p.i: p for p in scenario.simulation.predictions}
    graded = []
    for quantity in quantities:
        iterations = tuple(i for i in quantity.iterations(len(by_i)) if i in by_i)
        expression = predictions[quantity.name]
        predicted = expression.ms_at(one_way_delay_ms)
        model = Range.of([by_i[i].predicted_ms for i in iterations])
        band = max(by_i[i].tolerance_ms for i in iterations)
        allowed = allowance(model, band)
        typical = _typical(iterations, by_i)
        steps = explained[typical].steps if typical in explained else ()
        hops = explained[typical].packets_on_path if typical in explained else 0
        model_words = _model_words(hops, by_i[typical].predicted_ms, one_way_delay_ms, steps)
        ok = model.distance(predicted) <= allowed
        sentence = _sentence(
            quantity, expression, predicted, model, model_words, ok, allowed, hops, reason
        )
        measured_values = [by_i[i].measured_ms for i in iterations]
        measured = measured_ok = None
        measured_sentence = ""
        if measured_values and all(v is not None for v in measured_values):
            measured = Range.of([v for v in measured_values if v is not None])
            measured_ok = measured.distance(predicted) <= allowed
            measured_sentence = _measured_sentence(predicted, measured, measured_ok, allowed)
        graded.append(
            QuantityGrade(
                quantity,
                iterations,
                expression,
                predicted,
                model,
                model_words,
                allowed,
                ok,
                sentence,
                measured,
                measured_ok,
                measured_sentence,
            )
        )
    return Grade(tuple(graded))


def _typical(iterations: tuple[int, ...], by_i: Mapping[int, Any]) -> int:
    """The iteration whose model value is the (lower) median of the quantity's."""
    ordered = sorted(iterations, key=lambda i: (by_i[i].predicted_ms, i))
    return ordered[(len(ordered) - 1) // 2]


def _model_words(hops: int, value_ms: float, delay_ms: float, steps: tuple[str, ...]) -> str:
    """The model's value in D: "2D = 20.0 ms", "4D + 44 ms = 84.0 ms", with its path."""
    rest = value_ms - hops * delay_ms
    if hops and delay_ms:
        in_d = f"{hops}D" + (f" + {rest:.3g} ms" if abs(rest) >= 0.05 else "")
        head = f"{in_d} = {value_ms:.1f} ms"
    else:
        head = f"{value_ms:.1f} ms"
    return f"{head} ({', '.join(steps)})" if steps else head


def _sentence(
    quantity: Quantity,
    expression: Expression,
    predicted: float,
    model: Range,
    model_words: str,
    ok: bool,
    allowed: float,
    hops: int,
    reason: str,
) -> str:
    said = " ".join(expression.text.split()) or expression.words()
    yours = f"{said} = {predicted:.1f} ms" if expression.uses_delay else f"{predicted:.1f} ms"
    spread = "" if model.prints_as_one() else f"; over these iterations {model.words()}"
    head = f"{quantity.name}: you predicted {yours}; the model says {model_words}{spread}"
    if ok:
        return f"✓ {head}. Within {allowed:.3g} ms: right."
    why: list[str] = []
    if expression.uses_delay and hops and abs(expression.d - hops) >= 0.5:
        why.append(f"the path has {hops} one-way trips, not {expression.d:g}")
    elif not expression.uses_delay:
        off = predicted - (model.low if predicted < model.low else model.high)
        why.append(f"{abs(off):.1f} ms {'more' if off > 0 else 'less'} than the model")
    if expression.uses_delay and abs(expression.d - hops) < 0.5:
        off = predicted - (model.low if predicted < model.low else model.high)
        much = "too much" if off > 0 else "too little"
        why.append(f"the trips are right, but {abs(off):.1f} ms {much} besides")
    text = f"✗ {head}: " + "; ".join(why)
    if reason:
        text += f". {reason[0].upper()}{reason[1:]}"
    return text + "."


def _measured_sentence(predicted: float, measured: Range, ok: bool, allowed: float) -> str:
    if ok:
        return f"✓ measured {measured.words()}: your {predicted:.1f} ms is within {allowed:.3g} ms."
    off = measured.distance(predicted)
    return (
        f"✗ measured {measured.words()}: your {predicted:.1f} ms is {off:.1f} ms off "
        f"(allowed {allowed:.3g} ms)."
    )
