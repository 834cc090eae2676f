"""The runner process: `python -m tfolab.runner` reads a Job on stdin, runs it in a
fresh network namespace, and writes its events on stdout (protocol.frame).

Rules: its life is one measuring turn (tfolab.runner.turn): the lab (namespace,
delay, capture, the first scenario's server) is set up only while no other run
measures, measured only while this run holds a machine-wide measurement slot,
and dismantled (servers, capture, delayer) before the slot is given back. It
dies with its parent (PR_SET_PDEATHSIG) and everything it starts dies with it,
so a SIGKILL anywhere above leaves nothing behind: the namespace is anonymous,
the iptables rule and qdisc live inside it. Errors the user can fix become one
"error" event and exit code 2.
"""

from __future__ import annotations

import sys
import time

from tfolab.core import kernel, lifetime, native, slots
from tfolab.core.errors import UserError
from tfolab.runner import netns, priority, truesize
from tfolab.runner.backends import REINSTALL_FIX, install_delay
from tfolab.runner.backends.base import InstalledDelay, delayer_lateness
from tfolab.runner.capture import Capture, CaptureUnavailable
from tfolab.runner.capture_delayer import DelayerCapture
from tfolab.runner.protocol import Done, Event, Failed, Job, Setup, frame
from tfolab.runner.scenario_run import LabNetwork, measure_scenario, prepare_scenario
from tfolab.runner.turn import LabProcesses, MeasuringTurn


def emit(event: Event) -> None:
    sys.stdout.buffer.write(frame(event))
    sys.stdout.buffer.flush()


def main() -> int:
    started = time.monotonic()
    lifetime.die_with_parent()
    job = Job.from_json(sys.stdin.read())
    try:
        if not job.scenarios:
            raise UserError("the runner was given no scenario to run", "name at least one")
        with MeasuringTurn(slots.SlotTable.open(), emit) as turn:
            server = str(native.executable_path("tfo-echo-server"))
            delayer = native.optional_executable("tfo-delay")
            with turn.setting_up():
                how = netns.enter_new_netns()
                netns.set_loopback(True)
                heads, heads_note = _measure_skb_heads(job)
                realtime, scheduling = priority.realtime_permitted()
                drops = any(s.config.drop or s.config.middlebox != "none" for s in job.scenarios)
                delay = install_delay(job.backend, job.delay_ms, delayer, record=True, drops=drops)  # type: ignore[arg-type]
                turn.dismantle_at_end(delay.stop)
                network = LabNetwork(delay.backend, delay.delay_ms, server)
                network.delayer_pid = None if delay.delayer is None else delay.delayer.pid
                network.plan_drops = delay.plan_drops if delay.drops_packets else None
                network.set_middlebox = delay.set_middlebox if delay.drops_packets else None
                capture_off = _open_capture(network, turn, delay)
                if capture_off and any(s.config.replay_syn for s in job.scenarios):
                    # Before any scenario measures: the replay resends a captured SYN.
                    raise UserError(
                        f"the replay scenario resends a captured SYN, but {capture_off}",
                        "run as root where AF_PACKET sockets are allowed (see `tfolab doctor`), "
                        "or leave out --scenario replay",
                    )
                first = prepare_scenario(network, job.scenarios[0])
                turn.dismantle_at_end(first.server.stop)
                # Namespace + delay + the first server ready is the lab's setup time.
                notes = [*delay.notes, scheduling, turn.table.note, heads_note]  # some ""
                emit(
                    Setup(
                        backend=delay.backend,
                        delay_ms=delay.delay_ms,
                        namespace=how,
                        kernel=kernel.kernel_release(),
                        notes=[note for note in notes if note],
                        setup_ms=turn.setup_ms(started),
                        capture=capture_off,
                        realtime=realtime,
                        skb_heads=heads,
                    )
                )
            turn.take_slot(LabProcesses(first.server.process.pid, network.delayer_pid, realtime))
            measure_scenario(network, first, emit)
            for scenario in job.scenarios[1:]:
                measure_scenario(network, prepare_scenario(network, scenario), emit)
            stats = delay.stop()  # the turn closes the capture next, then gives the slot back
        emit(Done(delayer_stats=stats, delayer_lateness=delayer_lateness(stats)))
        return 0
    except UserError as err:
        emit(Failed(err.reason, err.fix))
        return 2
    except native.NativeError as err:
        emit(Failed(str(err), REINSTALL_FIX))
        return 2


def _measure_skb_heads(job: Job) -> tuple[dict[int, int], str]:
    """Each MTU's received-segment overhead for the model, or a note why the default stays."""
    try:
        return truesize.skb_heads({s.config.mtu for s in job.scenarios}), ""
    except (OSError, TimeoutError) as err:
        return {}, f"receive memory per segment not measured ({err}): the model's default is used"


def _open_capture(network: LabNetwork, turn: MeasuringTurn, delay: InstalledDelay) -> str:
    """Open the packet capture once, at setup (opening costs ~8 ms); "" or why not.

    On the NFQUEUE backend the delayer's own record is the capture (capture_delayer.py):
    a packet socket would see each packet before its delay."""
    if delay.delayer is not None and delay.record_fd is not None:
        assert delay.delayer.stdout is not None
        recorded = DelayerCapture(
            delay.delayer.pid,
            delay.delayer.stdout.fileno(),
            delay.record_fd,
            delay.drop_record_fd,
            delay.late_record_fd,
        )
        recorded.open()
        network.capture = recorded
        return ""
    capture = Capture()
    try:
        capture.open()
    except CaptureUnavailable as err:
        return err.reason
    turn.dismantle_at_end(capture.close)
    network.capture = capture
    return ""


if __name__ == "__main__":
    sys.exit(main())
