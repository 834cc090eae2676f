"""The bench's runner process: `python -m tfolab.runner.bench_main` reads one BenchJob
(one delay) on stdin, runs it in a fresh network namespace, writes its events as
length-prefixed frames (protocol.frame).

Rules: as the lab runner (tfolab/runner/__main__.py): it dies with its parent and
everything it starts dies with it (the servers by --die-with-parent, nginx by
PR_SET_PDEATHSIG, the namespace with its last process); errors the user can fix
become one "error" event and exit code 2. Its life is one measuring turn
(tfolab.runner.turn), as a lab run's: it sets up while no other run measures,
measures only while it holds one of the machine's measurement slots, and
stops its servers and delayer before giving the slot back, so a bench and a
class's lab runs queue instead of disturbing each other. Its turn is the slot
alone: the bench's processes stay on normal scheduling, since at D = 0 it is
CPU-bound and real-time client and servers would starve the kernel's softirq
threads (the delayer keeps its own real-time priority, so the delay stays
exact).
"""

from __future__ import annotations

import sys
import time

from tfolab.core import kernel, lifetime, native, slots
from tfolab.core.errors import UserError
from tfolab.runner import netns, netstack
from tfolab.runner.backends import REINSTALL_FIX, install_delay
from tfolab.runner.backends.base import delayer_lateness
from tfolab.runner.bench_run import run_bench, start_servers
from tfolab.runner.protocol import BenchJob, Done, Event, Failed, Setup, frame
from tfolab.runner.turn import MeasuringTurn

FASTOPEN_SYSCTL = 3  # client and server Fast Open with cookies (the default of a host)


def emit(event: Event) -> None:
    sys.stdout.buffer.write(frame(event))
    sys.stdout.buffer.flush()


def configure() -> None:
    netstack.write_sysctl("net.ipv4.tcp_fastopen", FASTOPEN_SYSCTL)
    netstack.write_sysctl("net.ipv4.tcp_fastopen_key", netstack.random_fastopen_key())


def main() -> int:
    started = time.monotonic()
    lifetime.die_with_parent()
    job = BenchJob.from_json(sys.stdin.read())
    try:
        with MeasuringTurn(slots.SlotTable.open(), emit) as turn:
            server = str(native.executable_path("tfo-echo-server"))
            client = str(native.executable_path("tfo-bench-client"))
            delayer = native.optional_executable("tfo-delay")
            with turn.setting_up():
                how = netns.enter_new_netns()
                netns.set_loopback(True)
                delay = install_delay(job.backend, job.delay_ms, delayer)  # type: ignore[arg-type]
                turn.dismantle_at_end(delay.stop)
                configure()
                servers = start_servers(job, server)
                turn.dismantle_at_end(servers.stop)
                emit(
                    Setup(
                        backend=delay.backend,
                        delay_ms=delay.delay_ms,
                        namespace=how,
                        kernel=kernel.kernel_release(),
                        notes=[*delay.notes, "bench processes on normal scheduling"],
                        setup_ms=turn.setup_ms(started),
                        capture="the bench captures no packets",
                        realtime=False,
                    )
                )
            turn.take_slot()
            run_bench(job, servers, client, emit)
            servers.stop()
            stats = delay.stop()
        emit(Done(delayer_stats=stats, delayer_lateness=delayer_lateness(stats)))
        return 0
    except UserError as err:
        emit(Failed(err.reason, err.fix))
        return 2
    except native.NativeError as err:
        emit(Failed(str(err), REINSTALL_FIX))
        return 2


if __name__ == "__main__":
    sys.exit(main())
