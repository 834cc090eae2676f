"""Run one scenario for real inside the lab namespace, one event per measurement.

Rules: called only by the runner process, after the namespace and the delay
are in place, in two steps: `prepare_scenario` (its sysctls and its own echo
server; the first scenario's before the run holds a measurement slot) and
`measure_scenario` (only while the slot is held: tfolab.runner.turn), which
stops the server however it ends. Every scenario starts from a known state:
its own sysctls, a fresh TFO key, its cookie-cache policy and its own echo
server; the TcpExt counters and the server application's own counts
(accepted, requests) are read before and after, so their deltas belong to
this scenario's measured part.
A replay_syn scenario's last iteration resends iteration 1's captured SYN from
a raw socket (replay.py), REPLAY_GAP after the previous client returned + 3D;
it is timed from that send to the arrival of the replayed connection's
response on the capture.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from tfolab.core import native
from tfolab.core.errors import UserError
from tfolab.model.drops import Drop
from tfolab.model.scenario import (
    CAPTURE_TAIL_MS,
    REPLAY_GAP_MS,
    SEND_BUFFER_BYTES,
    ScenarioConfig,
)
from tfolab.runner import netns, netstack, replay, settle
from tfolab.runner.app_calls import ServerStamp, captured_calls, ports_to_connections
from tfolab.runner.capture import (
    Capture,
    CapturedSegment,
    NumberedSegment,
    number_connections,
    pcap_frames,
)
from tfolab.runner.capture_delayer import DelayerCapture
from tfolab.runner.cpu_wait import LabThreads, stolen_ns
from tfolab.runner.protocol import (
    Captured,
    Counters,
    Event,
    Iteration,
    JobScenario,
    Note,
    ScenarioStarted,
)
from tfolab.runner.server import LAB_CONGESTION_CONTROL, EchoServer, start_server
from tfolab.runner.ts_lateness import with_ts_lateness

Emit = Callable[[Event], None]


@dataclass
class LabNetwork:
    backend: str
    delay_ms: float
    server_executable: str
    # Where clients connect. The TFO cookie cache is per destination address,
    # so a fresh 127.0.0.N is an empty cache where a flush is not permitted.
    destination: str = "127.0.0.1"
    fresh_addresses_used: int = 0
    capture: Capture | DelayerCapture | None = None  # None where packet sockets are refused
    delayer_pid: int | None = None  # tfo-delay's, where the backend is NFQUEUE
    # tells the delayer which packets of the next connection to a port to drop
    plan_drops: Callable[[int, tuple[Drop, ...]], None] | None = None
    # tells the delayer what middlebox stands on the path to and from a port
    set_middlebox: Callable[[int, str], None] | None = None

    def empty_cookie_cache(self) -> str | None:
        """Flush the cookie cache and move to a fresh destination; a note if it could not flush.

        Both, because the kernel writes a closed connection's tcp_metrics entry
        (cookie, and which option kind to try: 34 or 254) when the socket is
        finally destroyed, which can come after the next scenario's flush: a
        late entry of the previous scenario once made a cached cookie go out
        as kind 254. A fresh 127.0.0.N has no entry, early or late.
        """
        flushed = netstack.flush_cookie_cache()
        if self.fresh_addresses_used >= 250:
            raise UserError(
                "no fresh loopback address left for an empty TFO cookie cache",
                "run fewer scenarios per run",
            )
        self.fresh_addresses_used += 1
        self.destination = f"127.0.0.{1 + self.fresh_addresses_used}"
        if flushed:
            return None
        return (
            f"cookie cache not flushable here (user namespace): using the fresh "
            f"destination {self.destination}, whose cache entry is empty"
        )


def configure_namespace(network: LabNetwork, config: ScenarioConfig) -> None:
    netns.set_loopback(True, config.mtu)
    # Below loopback's own MTU the lab is about real segment sizes: no super-segments.
    netns.set_segmentation_offload(config.mtu >= LOOPBACK_MTU)
    netstack.write_sysctl("net.ipv4.tcp_fastopen", config.fastopen_sysctl)
    netstack.write_sysctl("net.ipv4.tcp_fastopen_key", netstack.random_fastopen_key())
    # Every write is copied whole at once: a send() never waits for buffer space
    # mid-answer (model/domain.py: SEND_BUFFER_BYTES).
    netstack.write_sysctl("net.ipv4.tcp_wmem", f"4096 {SEND_BUFFER_BYTES} {SEND_BUFFER_BYTES}")
    # Each connection's RTO comes from its own handshake's RTT, as in the model: the
    # route-metrics cache would carry an earlier connection's (the warm-up's) into
    # tcp_init_metrics, floored to ticks, a tick early or not by microseconds
    # (TCP-NOTES: "A lost request or response"). Fast Open's cookies stay cached.
    netstack.write_sysctl("net.ipv4.tcp_no_metrics_save", 1)
    if netstack.has_sysctl("net.ipv4.tcp_pingpong_thresh"):
        netstack.write_sysctl("net.ipv4.tcp_pingpong_thresh", config.pingpong_thresh)
    elif config.pingpong_thresh != 1:
        raise UserError(
            "this kernel has no net.ipv4.tcp_pingpong_thresh sysctl",
            "drop the pingpong_thresh setting (the sysctl exists since Linux 6.7; "
            "before, the threshold is built in)",
        )


# per call of the native client where the job gives none (the warm-up's own exchange)
CLIENT_TIMEOUT_MS = 10_000


def client_options(
    config: ScenarioConfig,
    host: str,
    port: int,
    iterations: int,
    timeout_ms: int = CLIENT_TIMEOUT_MS,
) -> native.ClientOptions:
    return native.ClientOptions(
        host=host,
        port=port,
        fastopen=config.client_fastopen,
        pattern=config.pattern,
        nodelay=config.nodelay,
        cork=config.cork,
        msg_more=config.msg_more,
        single_write=config.single_write,
        payload_bytes=config.request_bytes,
        first_write_bytes=config.first_write_bytes,
        second_write_bytes=config.second_write_bytes,
        response_bytes=config.response_bytes,
        read_whole=config.read_whole,
        iterations=iterations,
        connections=1,
        timeout_ms=timeout_ms,
        congestion=LAB_CONGESTION_CONTROL,
    )


# How long a part's connections may take to end (their FINs: 3D, the server's close, a
# probe of a lost FIN 200 ms or more on) before the run goes on anyway, with a note: the
# warm-up's before the measured part, the measured ones before the capture stops.
SETTLE_DELAYS = 6
SETTLE_MS = 1000.0


def _settle_s(delay_ms: float) -> float:
    return (SETTLE_DELAYS * delay_ms + SETTLE_MS) / 1000


def _measured_open(waited_s: float) -> str:
    return (
        f"a measured connection's FIN was still unacknowledged {waited_s * 1000:.0f} ms "
        "after the capture's tail: the capture stops there, and what it sends later is not "
        "compared (its counters are)"
    )


def _warm_up_open(waited_s: float) -> str:
    return (
        f"the warm-up exchange's connection was still open after {waited_s * 1000:.0f} ms; "
        "its teardown may overlap iteration 1 (its packets are not compared; its counters "
        "would be)"
    )


def _warm_up_options(config: ScenarioConfig, host: str, port: int) -> native.ClientOptions:
    """A plain 16-byte exchange; the answer is the scenario's server's (response_bytes)."""
    return native.ClientOptions(
        host=host,
        port=port,
        response_bytes=config.response_bytes,
        timeout_ms=CLIENT_TIMEOUT_MS,
        congestion=LAB_CONGESTION_CONTROL,
    )


def headline_ms(config: ScenarioConfig, sample: native.Sample) -> float:
    """The model's headline (ScenarioConfig.headline_to_last_byte), measured."""
    if config.pattern == "wwr":
        return sample.round_ms
    return sample.last_byte_ms if config.headline_to_last_byte else sample.first_byte_ms


@dataclass(frozen=True)
class PreparedScenario:
    """A scenario ready to measure: its namespace configured, its echo server up."""

    scenario: JobScenario
    server: EchoServer


def prepare_scenario(network: LabNetwork, scenario: JobScenario) -> PreparedScenario:
    configure_namespace(network, scenario.config)
    return PreparedScenario(scenario, start_server(network.server_executable, scenario.config))


def measure_scenario(network: LabNetwork, prepared: PreparedScenario, emit: Emit) -> None:
    """Measure a prepared scenario, its events emitted as they come; its server stops."""
    scenario, server = prepared.scenario, prepared.server
    config = scenario.config
    emit(ScenarioStarted(scenario.name))
    try:
        # One unmeasured plain exchange first: a freshly started server's first
        # accept and read take cold code paths (a few ms), which is not TCP.
        # Plain connect learns no cookie; the cache policy is applied after it.
        _check(
            native.run_client(_warm_up_options(config, network.destination, server.port)),
            "warm-up exchange",
        )
        # Its teardown (3D and the server's close) is not the model's: let it end, so that
        # none of its timers (a tail-loss probe on a slow host) moves the measured counters.
        settle_s = _settle_s(network.delay_ms)
        if not settle.wait_until_over(settle_s):
            emit(Note(scenario.name, _warm_up_open(settle_s)))
        if config.middlebox != "none":  # from here on: the model's warm-up connection too
            if network.set_middlebox is None:
                raise UserError(
                    f"the middlebox setting needs the NFQUEUE delayer, and this run's backend "
                    f"is {network.backend}",
                    "use --backend nfqueue",
                )
            network.set_middlebox(server.port, config.middlebox)
        uses_fastopen = config.client_fastopen != "off"
        if uses_fastopen and config.cookie_cache in ("flush", "warm"):
            note = network.empty_cookie_cache()
            if note:
                emit(Note(scenario.name, note))
        if uses_fastopen and config.cookie_cache == "warm":
            warm = native.run_client(
                client_options(
                    config, network.destination, server.port, 1, scenario.call_timeout_ms
                )
            )
            _check(warm, "warm-up connection")
        if config.replay_syn and network.capture is None:
            raise UserError(
                "the replay scenario resends a captured SYN, but packets cannot be captured here",
                "run as root where AF_PACKET sockets are allowed (see `tfolab doctor`)",
            )
        threads = LabThreads.of(server.process.pid, network.delayer_pid)
        waited_before, stolen_before = threads.waited_ns(), stolen_ns()
        before = netstack.read_tcpext()
        app_before = server.stats()
        if network.capture is not None:
            network.capture.start()
        measured: list[native.Sample] = []
        earlier: list[CapturedSegment] = []
        client_iterations = scenario.iterations - (1 if config.replay_syn else 0)
        if config.fresh_connection_each_iteration:
            for i in range(1, client_iterations + 1):
                if config.rotate_key_before_iteration == i:
                    _rotate_key(emit, scenario.name, i)
                if config.drop:
                    _plan_drops(network, server.port, config, i)
                waited = threads.waited_ns()
                samples = native.run_client(
                    client_options(
                        config, network.destination, server.port, 1, scenario.call_timeout_ms
                    )
                )
                waited = threads.waited_ns() - waited
                _check(samples, f"iteration {i}")
                measured.append(samples[0])
                _emit_sample(emit, scenario.name, i, config, samples[0], measured[0], waited)
        else:
            # One connection: a key changed before its first iteration meets its SYN (the
            # model rotates at a connection's start too); a later change meets no SYN.
            if config.rotate_key_before_iteration == 1:
                _rotate_key(emit, scenario.name, 1)
            waited = threads.waited_ns()
            samples = native.run_client(
                client_options(
                    config,
                    network.destination,
                    server.port,
                    scenario.iterations,
                    scenario.call_timeout_ms,
                )
            )
            waited = threads.waited_ns() - waited
            _check(samples, "the connection")
            measured += samples
            for i, sample in enumerate(samples, start=1):
                _emit_sample(emit, scenario.name, i, config, sample, samples[0], waited)
        tail_ms, replayed = 0.0, None
        if config.replay_syn:
            earlier, syn, sent_ns = _replay(network)
            replayed = (syn, sent_ns)
            tail_ms = network.delay_ms  # the RSTs come 4D after the replay
        if network.capture is not None:
            captured, segments, settled = _captured(
                network,
                scenario.name,
                measured,
                earlier,
                tail_ms,
                lossy=bool(config.drop),
                server_calls=server.calls,
            )
            if not settled:
                emit(Note(scenario.name, _measured_open(_settle_s(network.delay_ms))))
            if replayed is not None:
                emit(_replay_iteration(scenario, segments, *replayed, measured[0]))
            emit(captured)
        after = netstack.read_tcpext()
        app = server.stats().since(app_before)
        scenario_waited = threads.waited_ns() - waited_before
        stolen = stolen_ns() - stolen_before
    finally:
        server.stop()
    emit(
        Counters(
            scenario.name,
            netstack.counter_deltas(before, after),
            app_accepted=app.accepted,
            app_requests=app.requests,
            cpu_wait_ms=round(scenario_waited / 1e6, 3),
            steal_ms=round(stolen / 1e6, 3),
        )
    )


def _plan_drops(network: LabNetwork, port: int, config: ScenarioConfig, iteration: int) -> None:
    """The delayer's plan for this iteration's connection: the drops that apply to it."""
    if network.plan_drops is None:
        raise UserError(
            f"the drop setting needs the NFQUEUE delayer, and this run's backend is "
            f"{network.backend}",
            "use --backend nfqueue",
        )
    network.plan_drops(port, tuple(d for d in config.drop if d.applies_to(iteration)))


def _replay(network: LabNetwork) -> tuple[list[CapturedSegment], CapturedSegment, int]:
    """Resend iteration 1's SYN once the previous connection is over on the server.

    Returns what the capture kept before the replay (it restarts at a quiet
    moment to read the SYN), the SYN, and when it was sent again.
    """
    assert network.capture is not None
    time.sleep((3 * network.delay_ms + REPLAY_GAP_MS) / 1000)
    before = network.capture.stop()
    network.capture.start()
    syn = replay.first_syn_with_data(before.segments)
    if syn is None:
        raise UserError(
            "the replay scenario found no SYN with data in iteration 1's capture",
            "keep cookie_cache=warm so that iteration 1 sends its request in the SYN",
        )
    if len(syn.frame) < syn.wire_len:  # the NFQUEUE record keeps 65531 bytes of a packet
        raise UserError(
            f"the replay scenario's SYN was captured cut short ({len(syn.frame)} of "
            f"{syn.wire_len} bytes), so it cannot be sent again",
            "use an MTU below 65000 for the replay scenario",
        )
    return list(before.segments), syn, replay.send_again(syn)


def _replay_iteration(
    scenario: JobScenario,
    segments: list[CapturedSegment],
    syn: CapturedSegment,
    sent_ns: int,
    first: native.Sample,
) -> Iteration:
    """The replay, timed from its send to the replayed connection's response arriving."""
    response = next(
        (
            seg
            for seg in segments
            if seg.src_port == syn.dst_port and seg.dst_port == syn.src_port
            and seg.length > 0 and seg.t_ns > sent_ns
        ),
        None,
    )  # fmt: skip
    if response is None:
        raise UserError(
            "the replayed SYN drew no response from the server application",
            "run `tfolab doctor`; compare the captured packets with the model's (--pcap)",
        )
    return Iteration(
        scenario=scenario.name,
        i=scenario.iterations,
        measured_ms=round((response.t_ns - sent_ns) / 1e6, 3),
        connect_ms=0.0,
        syn_data_acked=True,
        start_ms=round((sent_ns - first.connect_start_ns) / 1e6, 4),
    )


def _captured(
    network: LabNetwork,
    name: str,
    measured: list[native.Sample],
    earlier: list[CapturedSegment] | None = None,
    tail_ms: float = 0.0,
    *,
    lossy: bool = False,
    server_calls: Callable[[], list[ServerStamp]] | None = None,
) -> tuple[Captured, list[CapturedSegment], bool]:
    """Stop the capture once the last segments have crossed the delayed link.

    `earlier`: segments of earlier rounds of this capture (a replay restarts it).
    `lossy`: the path drops packets, so a FIN may wait for its probe (settle.py).
    `server_calls`: reads the echo server's call stamps (here, once its last FIN is
    captured: tfolab.runner.app_calls), kept beside the client's samples.
    Returns the event, every segment captured (the replay is timed on them), and
    whether every FIN was acknowledged when it stopped.
    """
    assert network.capture is not None
    # After the client's close() the FINs and the last ACK need up to 3D more,
    # and a delayed ACK of a FIN at most one delayed-ACK timer (40-50 ms). Where the
    # path drops packets, a lost FIN or last ACK keeps a FIN unacknowledged until its
    # probe, 200 ms or more on, is answered: the capture waits for it. Without drops
    # it does not: the one FIN lost then (a delayed-ACK race at D = 0, late_ack.py) is
    # sent again after the capture, as the model states.
    time.sleep((3 * network.delay_ms + CAPTURE_TAIL_MS + tail_ms) / 1000)
    settled = not lossy or settle.wait_until_fins_acked(_settle_s(network.delay_ms))
    last = network.capture.stop()
    segments = sorted([*(earlier or []), *last.segments], key=lambda seg: seg.t_ns)
    # netem measures nothing: each segment's TSval does, against capture times that a
    # clock step during the capture would move (then nothing is measured)
    if network.backend == "netem" and abs(last.clock_step_ns) < CLOCK_STEP_NS:
        segments = with_ts_lateness(segments)
    origin = measured[0].connect_start_ns if measured else 0
    numbered = number_connections(segments, origin)
    opened = _opened(numbered)
    rows = [row for row in numbered if row.connection in opened]
    renumber = {old: new for new, old in enumerate(sorted({r.connection for r in rows}), 1)}
    ports = ports_to_connections(
        (r.segment.src_port if r.sender == "client" else r.segment.dst_port, renumber[r.connection])
        for r in rows
    )
    captured = Captured(
        scenario=name,
        segments=[r.to_row(renumber[r.connection]) for r in rows],
        frames=pcap_frames(r.segment for r in rows),
        lost=last.lost,
        calls=captured_calls(measured, server_calls() if server_calls else [], ports, origin),
    )
    return captured, segments, settled


LOOPBACK_MTU = 65536
# a change of CLOCK_REALTIME - CLOCK_MONOTONIC during a capture beyond which its times
# cannot measure netem's lateness (normally well under a microsecond; capture.py)
CLOCK_STEP_NS = 100_000


def _opened(rows: tuple[NumberedSegment, ...]) -> set[int]:
    """Connections whose SYN is in the capture (not the tail of an earlier one)."""
    return {
        r.connection
        for r in rows
        if "SYN" in r.flags and "ACK" not in r.flags and r.sender == "client"
    }


def _emit_sample(
    emit: Emit,
    name: str,
    i: int,
    config: ScenarioConfig,
    sample: native.Sample,
    first: native.Sample,
    cpu_wait_ns: int,
) -> None:
    # A round of write-write-read starts at its first write; a fresh connection at its call;
    # a later request on a kept connection (no connect: its stamp is 0) at its write.
    start_ns = (
        sample.write_ns[0]
        if config.pattern == "wwr" or not sample.connect_start_ns
        else sample.connect_start_ns
    )
    emit(
        Iteration(
            scenario=name,
            i=i,
            measured_ms=round(headline_ms(config, sample), 3),
            connect_ms=round(sample.connect_ms, 3),
            syn_data_acked=sample.syn_data_acked,
            start_ms=round((start_ns - first.connect_start_ns) / 1e6, 4),
            cpu_wait_ms=round(cpu_wait_ns / 1e6, 3),
        )
    )


def _check(samples: list[native.Sample], what: str) -> None:
    if not samples:
        raise UserError(f"the client returned nothing for {what}", "run `tfolab doctor`")
    for sample in samples:
        if sample.error:
            raise UserError(f"{what} failed: {sample.error}", "run `tfolab doctor`")


def _rotate_key(emit: Emit, name: str, iteration: int) -> None:
    """A new server TFO key: cookies made with the old one no longer validate."""
    netstack.write_sysctl("net.ipv4.tcp_fastopen_key", netstack.random_fastopen_key())
    emit(Note(name, f"server TFO key changed before {iteration}"))
