"""A test's `tfolab serve` gets the session's own slots folder by --slots-dir, not the
environment: started as root, serve takes no folder from its environment."""

from __future__ import annotations

import os

from tfolab.core.slots import DIR_ENV


def slots_by_flag(
    args: list[str], env: dict[str, str] | None
) -> tuple[list[str], dict[str, str] | None]:
    """`tfolab ARGS` with the session's slots folder given to `serve` as --slots-dir.

    Only for serve started as root, and only when the caller did not put
    TFOLAB_SLOTS_DIR in `env` itself (a test of that refusal keeps it).
    """
    if not args or args[0] != "serve" or os.geteuid() != 0:
        return args, env
    if env is not None and DIR_ENV in env and env[DIR_ENV] != os.environ.get(DIR_ENV):
        return args, env
    environment = dict(os.environ if env is None else env)
    slots = environment.pop(DIR_ENV, None)
    if slots is None:
        return args, env
    return ["serve", "--slots-dir", slots, *args[1:]], environment
