"""A one-way delay as a student types it: in a flag, a form field or a bench's list.

Rules: '10', '2.5' and '10ms' are read; anything else, or a value outside
0..MAX_DELAY_MS, is a UserError whose fix shows a good value in the words the
student typed it in (`example`).
"""

from __future__ import annotations

from tfolab.core.errors import UserError
from tfolab.model.scenario import MAX_DELAY_MS


def parse_delay(text: str, example: str = "--delay 10") -> float:
    """The one-way delay in ms from '10', '2.5' or '10ms'; UserError otherwise.

    `example` is how the fix shows a good value, in the flag the user typed.
    """
    raw = text.strip().lower().removesuffix("ms").strip()
    try:
        value = float(raw)
    except ValueError:
        raise UserError(
            f"invalid delay {text!r}",
            f"give the one-way delay in milliseconds, e.g. {example}",
        ) from None
    if not 0 <= value <= MAX_DELAY_MS or value != value:
        raise UserError(
            f"delay {text!r} is out of range",
            f"give a one-way delay from 0 to {MAX_DELAY_MS:g} ms, e.g. {example}",
        )
    return value
