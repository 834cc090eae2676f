"""The bench screen: `tfolab bench` in the UI, with a progress bar and two plots.

Rules: the inputs are the CLI's flags and go through the same check
(bench_plan.plan_bench) before anything runs; a refusal is shown in the
banner, nothing starts. The run is lab.bench.run_bench in a worker; the
screen only shows its progress and its BenchResult (table, closing lines,
gain vs RTT, the latency distribution of one delay at a time: l cycles).
"""

from __future__ import annotations

from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Footer, Header, Input, Label, ProgressBar, Select, Static

from tfolab.core.errors import UserError
from tfolab.lab import served_budget
from tfolab.lab.bench import BenchGuide, BenchResult, run_bench
from tfolab.lab.bench_plan import (
    DEFAULT_DELAYS,
    DEFAULT_REQUESTS,
    PEERS,
    BenchPlan,
    plan_bench,
)
from tfolab.tui.context import tfolab_app
from tfolab.tui.widgets.bench_plot import GainPlot, LatencyPlot
from tfolab.view.bench_report import closing, header, table


class BenchScreen(Screen[None]):
    """N fresh HTTP GETs with and without Fast Open, per delay, beside nginx."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "run", "Run the bench"),
        Binding("l", "next_latency", "Latency: next delay"),
        Binding("g", "guide", "Guide"),
        Binding("escape", "back", "Back"),
    ]

    def __init__(self, result: BenchResult | None = None) -> None:
        super().__init__()
        self.result = result
        self.running = False
        self.latency_index = 0

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="banner")
        with Horizontal(id="bench-body"):
            with Vertical(id="bench-form"):
                yield Label("one-way delays, ms")
                yield Input(DEFAULT_DELAYS, id="bench-delays")
                yield Label("requests per run")
                yield Input(str(DEFAULT_REQUESTS), id="bench-requests", type="integer")
                yield Label("concurrency (empty: automatic)")
                yield Input("", placeholder="auto", id="bench-concurrency", type="integer")
                yield Label("peer")
                yield Select(
                    [(p, p) for p in PEERS], value="auto", allow_blank=False, id="bench-peer"
                )
                yield Button("Run (r)", id="bench-run", variant="primary")
            with Vertical(id="bench-main"):
                yield ProgressBar(total=100, show_eta=False, id="bench-progress")
                yield Static("", id="bench-status")
                with Horizontal(id="bench-plots"):
                    yield GainPlot(id="bench-gain")
                    yield LatencyPlot(id="bench-latency")
                with VerticalScroll(id="bench-table-scroll"):
                    yield Static("", id="bench-table")
        yield Footer()

    def on_mount(self) -> None:
        # The keys (r, l, g) work from the start; Tab reaches the fields.
        self.query_one("#bench-run", Button).focus()
        if self.result is not None:
            self.show_result(self.result)
        else:
            self._banner("Press r to run the bench (about 45 s with the defaults); g: the guide.")

    def _banner(self, text: str, kind: str = "ok") -> None:
        banner = self.query_one("#banner", Static)
        banner.update(text)
        banner.set_classes(f"banner-{kind}")

    # --- running -----------------------------------------------------------------

    @on(Button.Pressed, "#bench-run")
    def _pressed(self) -> None:
        self.action_run()

    def action_run(self) -> None:
        if self.running:
            self.notify("The bench is already running.")
            return
        status = tfolab_app(self).real_runs
        if not status.possible:
            self._banner(f"Cannot run for real: {status.reason}. {status.fix}", "error")
            return
        try:
            plan = plan_bench(*self._inputs())
            served_budget.check_bench(plan)  # refused here, before it starts, when served
        except UserError as err:
            self._banner(f"{err.reason}; fix: {err.fix}" if err.fix else err.reason, "error")
            return
        self.running = True
        self.query_one("#bench-progress", ProgressBar).update(progress=0)
        note = f" {plan.peer_note}." if plan.peer_note else ""
        self._banner(f"Running the bench: {plan.concurrency_rule}.{note}", "busy")
        self.bench_worker(plan)

    def _inputs(self) -> tuple[str, int, int | None, str]:
        delays = self.query_one("#bench-delays", Input).value
        requests_text = self.query_one("#bench-requests", Input).value.strip()
        concurrency_text = self.query_one("#bench-concurrency", Input).value.strip()
        peer = str(self.query_one("#bench-peer", Select).value)
        try:
            requests = int(requests_text)
            concurrency = int(concurrency_text) if concurrency_text else None
        except ValueError:
            raise UserError(
                "requests and concurrency are whole numbers", "e.g. 1024 and 8, or empty"
            ) from None
        return delays, requests, concurrency, peer

    @work(exclusive=True, group="bench")
    async def bench_worker(self, plan: BenchPlan) -> None:
        try:
            result = await run_bench(plan, self._progress)
        except UserError as err:
            self._banner(f"The bench stopped: {err.reason}. {err.fix}", "error")
            return
        finally:
            self.running = False
        self.show_result(result)

    def _progress(self, fraction: float, text: str) -> None:
        self.query_one("#bench-progress", ProgressBar).update(progress=fraction * 100)
        self.query_one("#bench-status", Static).update(text)

    # --- the result ----------------------------------------------------------------

    def show_result(self, result: BenchResult) -> None:
        self.result = result
        self.query_one("#bench-progress", ProgressBar).update(progress=100)
        self.query_one("#bench-status", Static).update("\n".join(header(result)))
        self.query_one("#bench-table", Static).update(
            table(result) + "\n\n" + "\n".join(closing(result))
        )
        self.query_one(GainPlot).show(result)
        self.latency_index = max(0, len(result.rows) - 1)
        self._show_latency()
        self._banner(f"Bench done in {result.runtime_s:.0f} s. l: the next delay's latencies.")

    def _show_latency(self) -> None:
        if self.result is None or not self.result.rows:
            return
        row = self.result.rows[self.latency_index % len(self.result.rows)]
        self.query_one(LatencyPlot).show(row)

    def action_next_latency(self) -> None:
        self.latency_index += 1
        self._show_latency()

    def action_guide(self) -> None:
        from tfolab.tui.screens.guide import GuideScreen

        self.app.push_screen(GuideScreen(BenchGuide()))

    def action_back(self) -> None:
        if isinstance(self.focused, Input):
            self.set_focus(None)
            return
        self.dismiss()
