"""Started as root, tfolab takes the folders it acts on from its flags, never its environment.

Rules:
- Root's environment may carry what root did not choose (sudo -E, a profile,
  a stale export), naming a folder another user controls: the labs a root
  run follows, the slots folder root makes and writes files in, the folder
  root saves attempts in. So, started as root, the commands that act on the
  machine refuse the variables they would use: `serve` TFOLAB_LABS_DIR,
  TFOLAB_RESULTS_DIR and TFOLAB_SLOTS_DIR; `run` TFOLAB_LABS_DIR and
  TFOLAB_SLOTS_DIR; `bench` TFOLAB_SLOTS_DIR; the UI all three. One line
  names the variable and the flag to use instead, exit 2, nothing started.
- Root is the machine's uid 0 (core.privileges.machine_root): uid 0 of a user
  namespace an ordinary user made is that user, whose variables are theirs.
- `list`, `simulate`, `doctor` and `grade` only read and print, and take the
  variables from anyone; so does every command started by another user.
- The flags set the variables for what the command starts (a runner reads
  TFOLAB_SLOTS_DIR, a session TFOLAB_RESULTS_DIR), after this check.
"""

from __future__ import annotations

import os

from tfolab.core.errors import UserError

LABS, RESULTS, SLOTS = "TFOLAB_LABS_DIR", "TFOLAB_RESULTS_DIR", "TFOLAB_SLOTS_DIR"
INSTEAD = {
    LABS: "use --labs-dir DIR instead",
    SLOTS: "use --slots-dir DIR instead (or unset it: the machine's shared one)",
}
SERVE_RESULTS = "use --results DIR instead"
UI_RESULTS = "unset it, and type the folder in the predict form instead"
# command -> (what it is called in the refusal, the variables it would use, each one's fix)
CHECKED: dict[str | None, tuple[str, dict[str, str]]] = {
    "serve": ("serve", {LABS: INSTEAD[LABS], RESULTS: SERVE_RESULTS, SLOTS: INSTEAD[SLOTS]}),
    "run": ("tfolab run", {LABS: INSTEAD[LABS], SLOTS: INSTEAD[SLOTS]}),
    "bench": ("tfolab bench", {SLOTS: INSTEAD[SLOTS]}),
    None: ("the tfolab UI", {LABS: INSTEAD[LABS], RESULTS: UI_RESULTS, SLOTS: INSTEAD[SLOTS]}),
}


def check_inherited_folders(command: str | None) -> None:
    """UserError if `command` (None: the UI) was started as root with a folder variable set."""
    from tfolab.core.privileges import machine_root

    if command not in CHECKED or not machine_root():
        return
    who, fixes = CHECKED[command]
    for name, fix in fixes.items():
        if os.environ.get(name):
            raise UserError(
                f"{name} is set, and {who} started as root takes no folder from its environment",
                fix,
            )
