"""How much one served session may write into the class's results folder.

Rules:
- In a served session (tfolab.lab.identity.is_served), every file saved in
  the results folder (an attempt, a run) is counted: at most MAX_FILES new
  files and MAX_BYTES written in all. One more is refused with one line
  (UserError) before anything is written. A lesson's saves are a few dozen
  files of a few kB (an attempt) to a few hundred kB (a lab's run), so only
  a tab left looping, or a script, ever meets the bound.
- An attempt written again over its own file (graded after a run) is no new
  file, but its bytes count.
- Counted per session process: a reload is a new session with a new count.
  How fast sessions can start is bounded by the class (places at once, per
  client), and how fast runs can be saved by the measurement slots.
- Outside a served session nothing is counted or refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfolab.core.errors import UserError
from tfolab.lab.identity import is_served

MAX_FILES = 500
MAX_BYTES = 200 * 1024 * 1024


@dataclass
class SaveCount:
    files: int = 0
    written: int = 0

    def take(self, size: int, new_file: bool = True) -> None:
        """Count a save of `size` bytes; UserError if it would pass a bound (nothing counted)."""
        if not is_served():
            return
        if new_file and self.files >= MAX_FILES:
            raise UserError(
                f"this session has saved {MAX_FILES} files for the class, the most one session may",
                "reload the page to start a new session, or ask your teacher",
            )
        if self.written + size > MAX_BYTES:
            raise UserError(
                f"this session has written {self.written / 2**20:.0f} MiB for the class; one "
                f"session may write {MAX_BYTES / 2**20:.0f} MiB",
                "reload the page to start a new session, or ask your teacher",
            )
        self.files += new_file
        self.written += size


SESSION = SaveCount()  # this process is one session


def take(size: int, new_file: bool = True) -> None:
    SESSION.take(size, new_file)
