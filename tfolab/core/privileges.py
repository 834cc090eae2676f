"""Dropping root for good: the web side of `tfolab serve` runs as an unprivileged user.

Rules:
- The user is looked up (and refused with a fix) before anything starts;
  root, and a user whose primary group is root's (gid 0), are refused.
- `drop_to(user)` clears the supplementary groups, then sets the group, then
  the user (real, effective and saved), and checks that root cannot be taken
  back. A parent-death signal armed before (core.lifetime) is armed again
  after, since the kernel drops it with the old credentials. Anything that
  needs root (binding a port below 1024, making a directory for that user)
  happens before it.
- Nothing here runs a command: only the setgroups/setgid/setuid system calls.
- `machine_root()`: uid 0 of the machine, not of a user namespace an ordinary
  user made (tfolab.cli.root_env refuses root's inherited folders by it).
"""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass
from pathlib import Path

from tfolab.core import lifetime
from tfolab.core.errors import UserError

DEFAULT_USERS = ("tfolab", "nobody")  # the first that exists is the default


@dataclass(frozen=True)
class Account:
    name: str
    uid: int
    gid: int


def machine_root() -> bool:
    """Whether this process is the machine's root: effective uid 0, and (in a user
    namespace) a uid 0 that maps to root's outside it, not to an ordinary user's."""
    if os.geteuid() != 0:
        return False
    try:
        lines = Path("/proc/self/uid_map").read_text().splitlines()
    except OSError:
        return True  # no user namespaces here: uid 0 is root
    for line in lines:
        inner, outer, count = (int(field) for field in line.split())
        if inner <= 0 < inner + count:
            return outer - inner == 0
    return False


def default_user() -> str:
    for name in DEFAULT_USERS:
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    return DEFAULT_USERS[-1]


def find_account(name: str) -> Account:
    """The account `name` (a user name or a uid); UserError if there is none, or it is root."""
    try:
        entry = pwd.getpwuid(int(name)) if name.isdigit() else pwd.getpwnam(name)
    except (KeyError, OverflowError):
        raise UserError(
            f"there is no user {name!r} on this machine",
            "give an existing unprivileged user with --user (e.g. nobody), "
            "or create one: useradd --system tfolab",
        ) from None
    if entry.pw_uid == 0:
        raise UserError(
            f"--user {name} is root",
            "give an unprivileged user (e.g. --user nobody): the web side never runs as root",
        )
    if entry.pw_gid == 0:
        raise UserError(
            f"--user {name}: its primary group is root's (gid 0)",
            "give a user whose group is not root (e.g. --user nobody), "
            "or change its group: usermod -g GROUP " + entry.pw_name,
        )
    return Account(entry.pw_name, entry.pw_uid, entry.pw_gid)


def drop_to(account: Account) -> None:
    """Become `account` for good (this process and everything it starts)."""
    death_signal, parent = lifetime.parent_death_signal(), os.getppid()
    os.setgroups([])
    os.setgid(account.gid)
    os.setuid(account.uid)
    try:
        os.setuid(0)
    except PermissionError:
        pass
    else:  # pragma: no cover - the kernel refuses this to a process that set all three uids
        raise RuntimeError("root could be taken back after dropping privileges")
    if os.getuid() != account.uid or os.geteuid() != account.uid or os.getegid() != account.gid:
        raise RuntimeError(f"privileges were not dropped to {account.name}")
    if death_signal:
        lifetime.die_with_parent(death_signal, parent)
