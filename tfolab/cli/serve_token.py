"""Where `tfolab serve`'s token comes from: --token-file, $TFOLAB_SERVE_TOKEN, or new.

Rules:
- There is always a token, on loopback too (another local user, or a web
  page the teacher visits, must not get a session as the teacher).
- Never on the command line: every user of the machine reads every
  process's arguments (`ps`, /proc/PID/cmdline), so `--token T` is refused
  (one line naming the two ways below), before anything starts.
- The first given wins: --token-file FILE (a regular file only its owner may
  read), the environment variable TFOLAB_SERVE_TOKEN; else one is generated
  (secrets).
- The variable is removed from serve's environment once read, whichever
  source wins: every session's processes inherit that environment, and a
  session's user may read its own processes' /proc/PID/environ.
- A token is 8 to 128 letters, digits, - or _; anything else is one line
  and exit 2. The file is opened without blocking (a FIFO is refused) and
  read up to MAX_FILE bytes.
"""

from __future__ import annotations

import os
import re
import secrets
import stat

from tfolab.core.errors import UserError

TOKEN_ENV = "TFOLAB_SERVE_TOKEN"
TOKEN = re.compile(r"[A-Za-z0-9_-]{8,128}")
MAX_FILE = 4096


def _checked(token: str, where: str) -> str:
    if not TOKEN.fullmatch(token):
        raise UserError(
            f"{where} must be 8 to 128 letters, digits, - or _",
            "give another, or leave it out to get one generated",
        )
    return token


def read_token_file(path: str) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as err:
        raise UserError(f"--token-file {path}: {err.strerror}", "give a readable file") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UserError(f"--token-file {path} is not a regular file", "give a plain file")
        if info.st_mode & 0o077:
            raise UserError(
                f"--token-file {path} may be read by others (mode {info.st_mode & 0o777:o})",
                f"chmod 600 {path}",
            )
        data = os.read(fd, MAX_FILE + 1)
    finally:
        os.close(fd)
    try:
        text = data.decode("ascii").strip()
    except UnicodeDecodeError:
        text = "\0"
    return _checked(text, f"the token in --token-file {path}")


def choose_token(given: str | None, file: str | None) -> str:
    """The token every request needs; UserError for one on the command line (`given`),
    or a malformed or unreadable one."""
    from_env = os.environ.pop(TOKEN_ENV, None)
    if given is not None:
        raise UserError(
            "--token puts the class's token where every user of this machine reads it (ps)",
            f"put it in a file only you may read (chmod 600) and give --token-file FILE, "
            f"or set ${TOKEN_ENV}",
        )
    if file is not None:
        return read_token_file(file)
    if from_env:
        return _checked(from_env, f"${TOKEN_ENV}")
    return secrets.token_urlsafe(18)
