"""The time-sequence graph: what it draws from the rows, and how the picture says it."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from tests.model.scenarios import scenario
from tfolab.lab.packet_rows import Row, model_rows
from tfolab.model import simulate
from tfolab.model.options import Mss, Timestamps, WindowScale
from tfolab.view.seq_graph import Bar, GraphRow, Step, busiest_direction, seq_graph, step_points
from tfolab.view.seq_plot import plot_text
from tfolab.view.seq_svg import svg_document

SVG = "{http://www.w3.org/2000/svg}"


def row(sender: str, flags: tuple[str, ...], seq: int, ack: int | None, length: int,
        t: float, window: int | None = None, options: tuple = (), event_id: int | None = 1,
        connection: int = 1) -> Row:  # fmt: skip
    return Row(connection, sender, flags, seq, ack, length, options, t,  # type: ignore[arg-type]
               window=window, event_id=event_id)  # fmt: skip


HANDSHAKE = [
    row("client", ("SYN",), 0, None, 0, 5.0, 65495, (Mss(65495), WindowScale(7))),
    row("server", ("SYN", "ACK"), 0, 1, 0, 10.0, 65483, (Mss(65495), WindowScale(9))),
]


def test_bars_acks_and_the_window_edge_scaled_by_the_peer() -> None:
    rows = [
        *HANDSHAKE,
        row("client", ("ACK",), 1, 1, 1000, 15.0, 512, (Timestamps(),)),
        row("client", ("ACK", "PSH"), 1001, 1, 500, 15.0, 512, (Timestamps(),)),
        row("server", ("ACK",), 1, 1501, 0, 20.0, 100, (Timestamps(),)),
        row("client", ("FIN", "ACK"), 1501, 1, 0, 25.0, 512, (Timestamps(),)),
    ]
    graph = seq_graph(rows, 1, "client", "model")
    # from the connection's first segment; a SYN and a FIN take one sequence number
    assert graph.bars == (
        Bar(0.0, 0, 1, ("SYN",)),
        Bar(10.0, 1, 1001, ("ACK",)),
        Bar(10.0, 1001, 1501, ("ACK", "PSH")),
        Bar(20.0, 1501, 1502, ("FIN", "ACK")),
    )
    assert graph.acks == (Step(5.0, 1), Step(15.0, 1501))
    # the SYN-ACK's window is never scaled; later ones by the server's shift, 9
    assert graph.window_edges == (Step(5.0, 1 + 65483), Step(15.0, 1501 + (100 << 9)))
    assert graph.payload_bytes == 1500
    server = seq_graph(rows, 1, "server", "model")
    assert server.window_edges[-1] == Step(20.0, 1 + (512 << 7))  # the client's shift, 7


def test_without_both_window_scale_options_nobody_scales() -> None:
    one_sided = [HANDSHAKE[0], row("server", ("SYN", "ACK"), 0, 1, 0, 10.0, 65483, (Mss(1460),)),
                 row("server", ("ACK",), 1, 1, 0, 20.0, 100)]  # fmt: skip
    assert seq_graph(one_sided, 1, "client", "kernel").window_edges[-1] == Step(15.0, 101)


def test_a_race_outcome_row_of_the_model_is_no_segment_but_every_captured_row_is() -> None:
    rows = [*HANDSHAKE, row("client", ("ACK",), 1, 1, 100, 15.0, event_id=None)]
    assert len(seq_graph(rows, 1, "client", "model").bars) == 1
    assert len(seq_graph(rows, 1, "client", "kernel").bars) == 2


def test_the_busiest_direction_is_drawn_first() -> None:
    rows = [
        *HANDSHAKE,
        row("client", ("ACK",), 1, 1, 16, 15.0),
        row("server", ("ACK",), 1, 17, 3000, 20.0),
        row("client", ("ACK",), 1, 1, 5000, 40.0, connection=2),
    ]
    assert busiest_direction(rows) == (2, "client")
    assert busiest_direction(rows[:4]) == (1, "server")
    assert busiest_direction(HANDSHAKE) is None


def test_step_points_hold_each_value_until_the_next() -> None:
    assert step_points([Step(1.0, 10), Step(3.0, 20)], 5.0) == (
        [1.0, 3.0, 3.0, 5.0],
        [10.0, 10.0, 20.0, 20.0],
    )


def large_data_graph():  # type: ignore[no-untyped-def]
    item = scenario("fastopen", "large-data")
    sim = simulate(item.config, one_way_delay_ms=10.0, iterations=item.iterations)
    rows = model_rows(sim)
    direction = busiest_direction(rows)
    assert direction is not None
    return seq_graph(rows, *direction, "model")


def test_the_terminal_plot_draws_the_models_graph_and_the_kernels_on_the_same_axes() -> None:
    graph = large_data_graph()
    text = plot_text(graph, graph.__class__(**{**graph.__dict__, "source": "kernel"}))
    assert "model: connection 1, the server's data" in text
    assert "kernel: connection 1, the server's data" in text
    assert "ACK + window" in text and "peer's ACK" in text
    assert "\x1b[" not in text  # no colour unless asked


def test_the_svg_is_one_well_formed_picture_with_a_bar_per_segment() -> None:
    graph = large_data_graph()
    hostile = graph.__class__(**{**graph.__dict__, "source": "kernel"})
    text = svg_document([GraphRow("fastopen/<large & data>", graph, hostile)])
    root = ET.fromstring(text)  # well formed, the heading escaped
    assert root.tag == f"{SVG}svg"
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "fastopen/<large & data>" in texts
    assert graph.title() in texts and hostile.title() in texts
    bars = [line for line in root.iter(f"{SVG}line") if line.get("stroke-width") == "2"]
    assert len(bars) == 2 * len(graph.bars)  # the model's panel and the kernel's
    assert len(list(root.iter(f"{SVG}polyline"))) == 4  # ACKs and window edge, twice
