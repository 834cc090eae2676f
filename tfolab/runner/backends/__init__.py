"""The delay backends, and the choice among them (`--backend auto|netem|nfqueue|none`).

Rules:
- `auto` picks netem, else nfqueue; at D = 0 it picks none. Every result says
  which ran. `none` never pretends to delay: asked for with D > 0 it is refused.
- `likely_backend` answers from cheap looks (no namespace, nothing started),
  so bad choices fail before anything runs; `install_delay`, inside the lab's
  namespace, is the final word.
- A lossy run (the `drop` and `middlebox` settings) needs the NFQUEUE delayer,
  which drops and rewrites packets by their order and content: `auto` and
  `nfqueue` give it the delay too; `netem` puts it at zero delay at the
  receiving end behind netem's D, where it judges each packet as netem
  delivers it and records them all (the capture: a packet socket would see a
  rewritten SYN before its rewrite, and a dropped one unmarked).
- Doctor, the runner, the lab session and the UI all ask through this package.
"""

from __future__ import annotations

import dataclasses

from tfolab.core.errors import UserError
from tfolab.runner.backends.base import (
    HOST_OVERHEAD_MS,
    HOST_OVERHEAD_NORMAL_SCHEDULING_MS,
    NO_BACKEND_FIX,
    REINSTALL_FIX,
    Backend,
    BackendChoice,
    DelayBackend,
    InstalledDelay,
    Trial,
    TrialKind,
)
from tfolab.runner.backends.netem import NETEM, remove_qdisc
from tfolab.runner.backends.nfqueue import NFQUEUE
from tfolab.runner.backends.none import NONE

__all__ = [
    "BACKENDS",
    "BACKEND_CHOICES",
    "HOST_OVERHEAD_MS",
    "HOST_OVERHEAD_NORMAL_SCHEDULING_MS",
    "NO_BACKEND_FIX",
    "REINSTALL_FIX",
    "Backend",
    "BackendChoice",
    "DelayBackend",
    "InstalledDelay",
    "Trial",
    "TrialKind",
    "install_delay",
    "likely_backend",
]

BACKENDS: dict[str, DelayBackend] = {"netem": NETEM, "nfqueue": NFQUEUE, "none": NONE}
BACKEND_CHOICES: tuple[str, ...] = ("auto", *BACKENDS)
AUTO_ORDER = (NETEM, NFQUEUE)


def likely_backend(
    choice: BackendChoice, delay_ms: float, delayer: str | None, *, drops: bool = False
) -> Backend:
    """The backend a run will most likely get, checked before anything is started.

    Raises UserError when the choice clearly cannot work here; the runner's own
    install is still the final word (a namespace may refuse what the config allows).
    `drops`: a scenario loses or rewrites packets (the `drop` and `middlebox` settings),
    which only the NFQUEUE delayer does (at any delay including 0, and behind netem).
    """
    if drops:
        return _dropping_backend(choice, delayer)
    if choice == "none" and delay_ms > 0:
        raise UserError("--backend none adds no delay: use --delay 0, or another backend")
    if choice == "none" or (choice == "auto" and delay_ms == 0):
        return "none"
    if choice != "auto":
        why = BACKENDS[choice].unavailable(delayer)
        if why:
            raise UserError(f"--backend {choice}: {why}", _fix_for(choice, delayer))
        return BACKENDS[choice].name
    reasons = []
    for backend in AUTO_ORDER:
        why = backend.unavailable(delayer)
        if why is None:
            return backend.name
        reasons.append(why)
    raise UserError(f"no delay backend: {', and '.join(reasons)}", NO_BACKEND_FIX)


def _dropping_backend(choice: BackendChoice, delayer: str | None) -> Backend:
    """The backend a lossy run gets: netem where asked for (the delayer behind it), else
    the NFQUEUE delayer alone."""
    if choice == "none":
        raise UserError(
            "--backend none cannot lose packets: the drop and middlebox settings need "
            "the bundled NFQUEUE delayer, which drops (or rewrites) them by their order and "
            "content",
            "use --backend nfqueue, netem or auto",
        )
    if choice == "netem" and (why := NETEM.unavailable(delayer)):
        raise UserError(f"--backend netem: {why}", _fix_for("netem", delayer))
    if why := NFQUEUE.unavailable(delayer):
        raise UserError(
            f"the drop and middlebox settings need the NFQUEUE delayer: {why}", NFQUEUE.fix
        )
    return NETEM.name if choice == "netem" else NFQUEUE.name


def install_delay(
    choice: BackendChoice,
    delay_ms: float,
    delayer: str | None,
    *,
    record: bool = False,
    drops: bool = False,
) -> InstalledDelay:
    """Install the chosen backend on this namespace's lo (the caller is in the lab namespace);
    `record`: the NFQUEUE delayer records what it releases (a run's capture); `drops`: a
    scenario loses packets (the NFQUEUE delayer's drop plans, at any delay)."""
    if drops:
        if _dropping_backend(choice, delayer) == NETEM.name:
            return _netem_and_delayer(delay_ms, delayer)
        return NFQUEUE.install(delay_ms, delayer, record=True)
    if choice == "none" or (choice == "auto" and delay_ms == 0):
        return NONE.install(0.0, delayer)
    if choice != "auto":
        return _install_or_explain(BACKENDS[choice], delay_ms, delayer, record)
    reasons = []
    for backend in AUTO_ORDER:
        try:
            return backend.install(delay_ms, delayer, record=record)
        except UserError as err:
            reasons.append(err.reason)
    raise UserError(f"no delay backend: {', and '.join(reasons)}", NO_BACKEND_FIX)


def _netem_and_delayer(delay_ms: float, delayer: str | None) -> InstalledDelay:
    """netem delays every packet by D; the NFQUEUE delayer, at zero delay at the
    receiving end (INPUT), drops or rewrites what a plan or the middlebox names and
    records every packet as netem delivered it (the run's capture). A failure leaves
    neither."""
    delayed = _install_or_explain(NETEM, delay_ms, delayer, record=False)
    try:
        judging = NFQUEUE.install(0.0, delayer, record=True)
    except BaseException:
        remove_qdisc()
        raise
    return dataclasses.replace(
        judging,
        backend=NETEM.name,
        delay_ms=delay_ms,
        notes=[
            *delayed.notes,
            f"the NFQUEUE delayer at zero delay behind netem ({judging.rule_way}, at the "
            "receiving end) drops and rewrites packets for the drop and middlebox "
            "settings, and records every packet as netem delivers it: the capture",
        ],
    )


def _install_or_explain(
    backend: DelayBackend, delay_ms: float, delayer: str | None, record: bool
) -> InstalledDelay:
    if backend is NETEM:
        try:
            return NETEM.install(delay_ms, delayer, record=record)
        except UserError as refused:
            raise UserError(
                f"--backend netem: {refused.reason}", _fix_for("netem", delayer)
            ) from None
    return backend.install(delay_ms, delayer, record=record)


def _fix_for(choice: str, delayer: str | None) -> str:
    if choice == "netem":
        return "use --backend nfqueue (the bundled delayer)"
    return REINSTALL_FIX if delayer is None else NO_BACKEND_FIX
