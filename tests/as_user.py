"""`python -m tests.as_user NAME CMD...`: run CMD as the user NAME, dropped as `tfolab serve`
drops (tfolab.core.privileges: groups, gid, uid), so tests see exactly what that user can do."""

from __future__ import annotations

import os
import sys

from tfolab.core.privileges import drop_to, find_account

if __name__ == "__main__":
    drop_to(find_account(sys.argv[1]))
    os.execvp(sys.argv[2], sys.argv[2:])
