"""The start screen: every lab and its scenarios, with the highlighted lab's guide.

Rules:
- Everything shown comes from labs/ (load_labs): titles, summaries, guides.
  A new lab file appears here without code. The guides' answers are hidden
  (tfolab.view.guide) except in demo mode; the lab's guide (g) reveals them.
- Enter (or a click) on a scenario opens the lab screen on it; on a lab, on
  its first scenario. Highlighting only changes the guide and the summary.
- A lab file that did not load is listed as BROKEN with its message
  (file:line: problem); it cannot be opened. The other labs work as usual.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Markdown, Static, Tree

from tfolab.lab.catalog import BrokenLab, Lab
from tfolab.tui.context import tfolab_app
from tfolab.view.guide import guide_markdown

# (lab name, scenario name or None for the lab), or a lab file that did not load
NodeData = tuple[str, str | None] | BrokenLab


class StartScreen(Screen[None]):
    """Pick a lab and a scenario."""

    BINDINGS: ClassVar[list[BindingType]] = [
        ("g", "focus_guide", "Guide"),
        ("l", "focus_labs", "Labs"),
    ]

    def __init__(self, labs: list[Lab], broken: tuple[BrokenLab, ...] | None = None) -> None:
        super().__init__()
        self.labs = labs
        # load_labs() returns a LabList that carries the broken files along.
        self.broken = tuple(broken if broken is not None else getattr(labs, "broken", ()))
        self._guide_lab: str | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="banner")
        with Horizontal(id="start-body"):
            with Vertical(id="start-left"):
                tree: Tree[NodeData] = Tree("Labs", id="labs")
                tree.show_root = False
                tree.auto_expand = False
                for lab in self.labs:
                    node = tree.root.add(
                        Text.assemble((lab.title, "bold"), "  ", (lab.name, "dim")),
                        data=(lab.name, None),
                        expand=True,
                    )
                    for scenario in lab.scenarios:
                        label = Text.assemble(scenario.name, "  ", (scenario.summary, "dim"))
                        node.add_leaf(label, data=(lab.name, scenario.name))
                for broken in self.broken:
                    tree.root.add_leaf(
                        Text.assemble(
                            (broken.name, "bold"),
                            "  ",
                            ("BROKEN", "bold red"),
                            "  ",
                            (broken.source.name, "dim"),
                        ),
                        data=broken,
                    )
                yield tree
                yield Static("", id="summary")
            with VerticalScroll(id="guide-pane"):
                yield Markdown("", id="guide")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "tfolab"
        self.sub_title = "an interactive TCP lab"
        status = tfolab_app(self).real_runs
        banner = self.query_one("#banner", Static)
        banner.update(status.banner())
        banner.set_classes("banner-ok" if status.possible else "banner-off")
        tree = self.query_one(Tree)
        tree.focus()
        if tree.root.children:
            tree.move_cursor(tree.root.children[0])
            # The labs are drawn first; the guide (Markdown to parse and lay out)
            # follows right after that first frame.
            self.call_after_refresh(self._show_first)

    def _show_first(self) -> None:
        first = self.query_one(Tree).root.children[0].data
        if isinstance(first, BrokenLab):
            self._show_broken(first)
        elif first is not None:
            self._show(*first)

    def _lab(self, name: str) -> Lab:
        return next(lab for lab in self.labs if lab.name == name)

    def _show(self, lab_name: str, scenario_name: str | None) -> None:
        lab = self._lab(lab_name)
        if scenario_name is None:
            summary = Text.assemble(
                (lab.title, "bold"), "\n", lab.summary, "\n", (f"measures: {lab.headline}", "dim")
            )
        else:
            scenario = lab.scenario(scenario_name)
            summary = Text.assemble(
                (f"{lab.name} / {scenario.name}", "bold"),
                "\n",
                scenario.summary,
                "\n",
                (f"{scenario.iterations} iteration(s) · Enter opens it", "dim"),
            )
        self.query_one("#summary", Static).update(summary)
        if self._guide_lab != lab_name:
            self._guide_lab = lab_name
            reveal = tfolab_app(self).predictions.demo
            self.query_one("#guide", Markdown).update(
                guide_markdown(lab.guide_text(), reveal=reveal)
            )
            self.query_one("#guide-pane").scroll_home(animate=False)

    def _show_broken(self, broken: BrokenLab) -> None:
        summary = Text.assemble(
            (f"{broken.name}: BROKEN", "bold red"),
            "\n",
            broken.reason,
            "\n",
            (f"fix: {broken.fix} · it cannot be opened until then", "dim"),
        )
        self.query_one("#summary", Static).update(summary)
        key = f"broken:{broken.source}"
        if self._guide_lab != key:
            self._guide_lab = key
            self.query_one("#guide", Markdown).update(
                f"# {broken.name}: this lab file does not load\n\n"
                f"```\n{broken.reason}\n```\n\n"
                f"Fix: {broken.fix}.\n\nThe other labs are not affected; "
                "restart tfolab after fixing the file."
            )
            self.query_one("#guide-pane").scroll_home(animate=False)

    @on(Tree.NodeHighlighted)
    def _highlighted(self, event: Tree.NodeHighlighted[NodeData]) -> None:
        data = event.node.data
        if isinstance(data, BrokenLab):
            self._show_broken(data)
        elif data is not None:
            self._show(*data)

    @on(Tree.NodeSelected)
    def _selected(self, event: Tree.NodeSelected[NodeData]) -> None:
        data = event.node.data
        if isinstance(data, BrokenLab):
            self.notify(
                f"{data.name} cannot be opened: {data.reason}", title="Broken lab", severity="error"
            )
        elif data is not None:
            lab_name, scenario = data
            tfolab_app(self).open_lab(lab_name, scenario)

    def action_focus_guide(self) -> None:
        self.query_one("#guide-pane").focus()

    def action_focus_labs(self) -> None:
        self.query_one(Tree).focus()
