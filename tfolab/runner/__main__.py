"""The runner process: `python -m tfolab.runner` reads a Job on stdin, runs it in a
fresh network namespace, and writes its events on stdout (protocol.frame).

Rules: only the measured part waits in line for a machine-wide measurement
slot (tfolab.core.slots); only then do the lab's processes take real-time
priority, and the lab is dismantled (delayer, capture) before the slot is
given back. Setup (namespace, delay, the first server) waits only while
another run measures: it is kernel work that, on a small machine, would show
up in that run's timings. It dies with its parent (PR_SET_PDEATHSIG) and everything it starts dies
with it, so a SIGKILL anywhere above leaves nothing behind: the namespace is
anonymous, the iptables rule and qdisc live inside it. Errors the user can fix
become one "error" event and exit code 2.
"""

from __future__ import annotations

import contextlib
import sys
import time

from tfolab.core import autogroup, cpus, kernel, lifetime, native, slots
from tfolab.core.errors import UserError
from tfolab.runner import netns, priority, truesize
from tfolab.runner.backends import REINSTALL_FIX, InstalledDelay, install_delay
from tfolab.runner.capture import Capture, CaptureUnavailable
from tfolab.runner.protocol import (
    Done,
    Event,
    Failed,
    Job,
    Setup,
    SlotTaken,
    SlotWait,
    frame,
)
from tfolab.runner.scenario_run import LabNetwork, run_scenario


def emit(event: Event) -> None:
    sys.stdout.buffer.write(frame(event))
    sys.stdout.buffer.flush()


def main() -> int:
    started = time.monotonic()
    lifetime.die_with_parent()
    job = Job.from_json(sys.stdin.read())
    delay: InstalledDelay | None = None
    held: list[slots.Slot] = []
    spared: list[int] = []  # a served class (UIs, waiting runs), kept off a CPU meanwhile
    try:
        table = slots.SlotTable.open()
        server = str(native.executable_path("tfo-echo-server"))
        delayer = native.optional_executable("tfo-delay")
        setup = contextlib.ExitStack()
        gate_started = time.monotonic()
        setup.enter_context(table.setting_up())  # kernel-heavy: never while a run measures
        gate_ms = (time.monotonic() - gate_started) * 1000  # in line too: counted as the wait
        started += gate_ms / 1000  # setup_ms is the lab's own setup, not that wait
        how = netns.enter_new_netns()
        netns.set_loopback(True)
        heads, heads_note = _measure_skb_heads(job)
        realtime, scheduling = priority.realtime_permitted()
        delay = install_delay(job.backend, job.delay_ms, delayer)  # type: ignore[arg-type]
        delay.notes.append(scheduling)
        if table.note:  # queued apart from other users': the shared slots were untrusted
            delay.notes.append(table.note)
        if heads_note:
            delay.notes.append(heads_note)
        network = LabNetwork(delay.backend, delay.delay_ms, server)
        capture_off = _open_capture(network)
        if capture_off and any(s.config.replay_syn for s in job.scenarios):
            # Before any scenario measures: the replay resends a captured SYN.
            raise UserError(
                f"the replay scenario resends a captured SYN, but {capture_off}",
                "run as root where AF_PACKET sockets are allowed (see `tfolab doctor`), "
                "or leave out --scenario replay",
            )
        installed = delay

        def report_setup() -> None:
            # Once: namespace + delay + the first server ready is the lab's setup time.
            emit(
                Setup(
                    backend=installed.backend,
                    delay_ms=installed.delay_ms,
                    namespace=how,
                    kernel=kernel.kernel_release(),
                    notes=installed.notes,
                    setup_ms=round((time.monotonic() - started) * 1000, 1),
                    capture=capture_off,
                    realtime=realtime,
                    skb_heads=heads,
                )
            )

        def measure_next(server_pid: int) -> None:
            # Setup is over: wait in line for a measurement slot, then measure at full priority.
            report_setup()
            setup.close()
            slot = table.acquire(lambda ahead: emit(SlotWait(ahead, table.size)))
            held.append(slot)
            # Until now this process waited in its parent's autogroup (a served UI's is at
            # nice 19); measuring, it leads one of its own at nice 0, as the server and
            # the delayer, started in sessions of their own, already do.
            autogroup.new_session()
            delayer_pid = () if installed.delayer is None else (installed.delayer.pid,)
            spared.extend(cpus.spare_for_measuring(table.size, (server_pid, *delayer_pid)))
            emit(SlotTaken(round(gate_ms + slot.waited_ms, 1), slot.size, slot.ahead))
            if realtime:
                priority.prefer_realtime((server_pid,))

        for index, scenario in enumerate(job.scenarios):
            run_scenario(network, scenario, emit, measure_next if index == 0 else None)
        # Dismantle the lab while still holding the slot: its teardown is kernel work
        # that would land in the next run's measurement; only the empty namespace is left.
        stats = delay.stop()
        if network.capture is not None:
            network.capture.close()
        _give_back(held, spared)
        emit(Done(delayer_stats=stats))
        return 0
    except UserError as err:
        emit(Failed(err.reason, err.fix))
        return 2
    except native.NativeError as err:
        emit(Failed(str(err), REINSTALL_FIX))
        return 2
    finally:
        _give_back(held, spared)
        if delay is not None:
            delay.stop()


def _give_back(held: list[slots.Slot], spared: list[int]) -> None:
    """Normal scheduling, the class's UIs every CPU again, then the slot to the next in line."""
    cpus.give_back(spared)
    spared.clear()
    for slot in held:
        priority.normal_scheduling()
        slot.release()
    held.clear()


def _measure_skb_heads(job: Job) -> tuple[dict[int, int], str]:
    """Each MTU's received-segment overhead for the model, or a note why the default stays."""
    try:
        return truesize.skb_heads({s.config.mtu for s in job.scenarios}), ""
    except (OSError, TimeoutError) as err:
        return {}, f"receive memory per segment not measured ({err}): the model's default is used"


def _open_capture(network: LabNetwork) -> str:
    """Open the packet capture once, at setup (opening costs ~8 ms); "" or why not."""
    capture = Capture()
    try:
        capture.open()
    except CaptureUnavailable as err:
        return err.reason
    network.capture = capture
    return ""


if __name__ == "__main__":
    sys.exit(main())
