"""A test's `tfolab serve`, `run`, `bench` or UI gets the session's own slots folder by
--slots-dir, not the environment: started as root, they take no folder from their
environment (tfolab.cli.root_env)."""

from __future__ import annotations

import os

from tfolab.cli.root_env import CHECKED
from tfolab.core.slots import DIR_ENV


def slots_by_flag(
    args: list[str], env: dict[str, str] | None
) -> tuple[list[str], dict[str, str] | None]:
    """`tfolab ARGS` with the session's slots folder given as --slots-dir.

    Only as root, only for the commands that refuse the variable (the UI: ARGS
    empty or starting with a flag), and only when the caller did not put
    TFOLAB_SLOTS_DIR in `env` itself (a test of that refusal keeps it).
    """
    if os.geteuid() != 0:
        return args, env
    ui = not args or args[0].startswith("-")
    if not ui and args[0] not in CHECKED:
        return args, env
    if env is not None and DIR_ENV in env and env[DIR_ENV] != os.environ.get(DIR_ENV):
        return args, env
    environment = dict(os.environ if env is None else env)
    slots = environment.pop(DIR_ENV, None)
    if slots is None:
        return args, env
    if ui:
        return ["--slots-dir", slots, *args], environment
    return [args[0], "--slots-dir", slots, *args[1:]], environment
