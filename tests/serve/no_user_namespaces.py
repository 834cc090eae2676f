"""`python -m tests.serve.no_user_namespaces CMD...`: CMD where user namespaces are refused,
as in a container whose seccomp profile refuses them (Docker's does, without CAP_SYS_ADMIN).

A seccomp filter makes unshare(2) with CLONE_NEWUSER fail with EPERM, for CMD and
everything it starts (a filter is inherited and cannot be removed); every other call
is allowed. The machine's sysctls are not touched, so tfolab's cheap look
(lab.environment.quick_check) sees nothing wrong: only a real attempt is refused.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
import sys

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
CLONE_NEWUSER = 0x10000000
ALLOW, REFUSE_EPERM = 0x7FFF0000, 0x00050000 | 1
LOAD, JUMP_IF_EQUAL, JUMP_IF_SET, RETURN = 0x20, 0x15, 0x45, 0x06
# (audit arch, unshare's number) of the machines this runs on
ARCHES = {"x86_64": (0xC000003E, 272), "aarch64": (0xC00000B7, 97)}


def supported() -> str | None:
    """None if the filter can be made here, else why not."""
    if platform.machine() not in ARCHES:
        return f"no seccomp filter written for {platform.machine()}"
    return None


def refuse_user_namespaces() -> None:
    arch, unshare = ARCHES[platform.machine()]
    program = [  # (code, jump if true, jump if false, k); seccomp_data: nr, arch, ip, args
        (LOAD, 0, 0, 4),  # arch
        (JUMP_IF_EQUAL, 0, 4, arch),
        (LOAD, 0, 0, 0),  # the call's number
        (JUMP_IF_EQUAL, 0, 2, unshare),
        (LOAD, 0, 0, 16),  # its flags (the low half of args[0])
        (JUMP_IF_SET, 1, 0, CLONE_NEWUSER),
        (RETURN, 0, 0, ALLOW),
        (RETURN, 0, 0, REFUSE_EPERM),
    ]
    code = b"".join(struct.pack("HBBI", *line) for line in program)
    buffer = ctypes.create_string_buffer(code, len(code))

    class Program(ctypes.Structure):
        _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    fprog = Program(len(program), ctypes.addressof(buffer))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


if __name__ == "__main__":
    refuse_user_namespaces()
    os.execvp(sys.argv[1], sys.argv[1:])
