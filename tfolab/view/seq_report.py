"""Which time-sequence graphs a lab result draws: one per scenario, model beside kernel.

Rules: presentation only. Each scenario draws the direction that carried the
most data (seq_graph.busiest_direction, read from the model's rows, else the
capture's), the model's graph and, where the run captured packets, the
kernel's for the same connection and sender.
"""

from __future__ import annotations

from tfolab.lab.packet_rows import captured_rows, model_rows
from tfolab.lab.results import LabResult, ScenarioResult
from tfolab.view.seq_graph import GraphRow, busiest_direction, seq_graph


def scenario_graph(lab_name: str, scenario: ScenarioResult) -> GraphRow | None:
    """The scenario's graph row, or None where no segment carried data."""
    model = model_rows(scenario.simulation)
    kernel = captured_rows(scenario.captured) if scenario.captured is not None else None
    direction = busiest_direction(model) or (busiest_direction(kernel) if kernel else None)
    if direction is None:
        return None
    connection, sender = direction
    return GraphRow(
        heading=f"{lab_name}/{scenario.planned.name}: connection {connection}, the {sender}'s data",
        model=seq_graph(model, connection, sender, "model"),
        kernel=None if kernel is None else seq_graph(kernel, connection, sender, "kernel"),
    )


def graph_rows(lab_name: str, result: LabResult) -> list[GraphRow]:
    rows = (scenario_graph(lab_name, scenario) for scenario in result.scenarios)
    return [row for row in rows if row is not None]
