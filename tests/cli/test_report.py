"""The run report: table verdicts, counters and the two-line conclusion."""

from __future__ import annotations

from tfolab.lab import session
from tfolab.lab.catalog import find_lab
from tfolab.view import report


def graded_fastopen(cookie_measured_ms: float) -> session.LabResult:
    lab = find_lab("fastopen")
    planned = session.plan(lab, "cookie", iterations=2)
    result = session.predict(lab, planned, 10.0, hz=250)
    result.measured = True
    result.backend = "nfqueue"
    first, second = result.scenarios[0].measurements
    first.measured_ms = 20.3
    second.measured_ms = cookie_measured_ms
    result.scenarios[0].counters = {"TCPFastOpenActive": 2, "TCPFastOpenPassive": 2}
    return result


def test_inside_the_band_reads_as_agreement() -> None:
    result = graded_fastopen(20.4)
    assert not result.failures
    text = report.conclusion(result)
    assert text.count("\n") == 1
    assert "All 2 measurements fell inside" in text
    assert "cookie 1.0" in text  # one round trip, in plain words
    assert "TCPFastOpenActive +2" in report.counters_text(result)


def test_outside_the_band_says_which_and_by_how_much() -> None:
    result = graded_fastopen(27.0)
    [(name, miss)] = result.failures
    assert name == "cookie" and miss.i == 2
    band_top = miss.predicted_ms + miss.tolerance_ms
    assert abs(miss.off_by_ms - (27.0 - band_top)) < 1e-9
    table = report.results_table(result)
    assert f"OUTSIDE by {27.0 - band_top:.1f} ms" in table
    assert "cookie #2 measured 27.0 ms" in report.conclusion(result)
    assert result.to_json()["scenarios"][0]["iterations"][1]["ok"] is False
