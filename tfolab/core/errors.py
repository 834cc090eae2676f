"""The one error type a user ever sees: a one-line reason plus the fix.

Rules: anything that is the user's input or the machine's environment raises
UserError; the CLI prints it as one line, `tfolab: <reason>; fix: <what to do>`,
and exits 2. Nothing else is caught: a bug should show its traceback.
"""

from __future__ import annotations


class UserError(Exception):
    """Bad input or an environment that cannot do what was asked."""

    def __init__(self, reason: str, fix: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.fix = fix

    def one_line(self) -> str:
        return f"{self.reason}; fix: {self.fix}" if self.fix else self.reason
