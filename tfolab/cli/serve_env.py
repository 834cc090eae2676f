"""Started as root, `tfolab serve` takes its folders from its flags, never from its environment.

Rules:
- Root's environment may carry what root did not choose (sudo -E, a profile,
  a stale export), naming a folder another user controls. Started as root,
  serve refuses TFOLAB_LABS_DIR, TFOLAB_RESULTS_DIR and TFOLAB_SLOTS_DIR in
  its environment: one line naming the flag to use instead, exit 2, nothing
  started.
- Started as any other user, the variables are that user's own, and honoured.
- For its sessions, serve sets TFOLAB_RESULTS_DIR (from --results),
  TFOLAB_LABS_DIR (from --labs-dir) and TFOLAB_SLOTS_DIR (from --slots-dir)
  itself.
"""

from __future__ import annotations

import os

from tfolab.core.errors import UserError

INSTEAD = {
    "TFOLAB_LABS_DIR": "use --labs-dir DIR instead",
    "TFOLAB_RESULTS_DIR": "use --results DIR instead",
    "TFOLAB_SLOTS_DIR": "use --slots-dir DIR instead (or unset it: the machine's shared one)",
}


def check_inherited_folders() -> None:
    if os.geteuid() != 0:
        return
    for name, fix in INSTEAD.items():
        if os.environ.get(name):
            raise UserError(
                f"{name} is set, and serve started as root takes no folder from its environment",
                fix,
            )
