"""Command palette entries: open any lab or any scenario by typing its name, or the bench.

Rules: built from the app's loaded labs, nothing else; each command calls
App.open_lab, the one way to open a lab (the bench: App.action_bench).
"""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from tfolab.tui.context import tfolab_app

BENCH_TEXT = "Open the bench: fresh connections with and without Fast Open, RTT by RTT"
BENCH_HELP = "gain vs RTT, measured beside the model and nginx"


class LabCommands(Provider):
    def _commands(self) -> list[tuple[str, str, str, str | None]]:
        commands: list[tuple[str, str, str, str | None]] = []
        for lab in tfolab_app(self).labs:
            commands.append((f"Open lab: {lab.title} ({lab.name})", lab.summary, lab.name, None))
            for scenario in lab.scenarios:
                commands.append(
                    (
                        f"Open scenario: {lab.name} / {scenario.name}",
                        scenario.summary,
                        lab.name,
                        scenario.name,
                    )
                )
        return commands

    async def discover(self) -> Hits:
        yield DiscoveryHit(BENCH_TEXT, tfolab_app(self).action_bench, help=BENCH_HELP)
        for text, help_text, lab, scenario in self._commands():
            yield DiscoveryHit(
                text, partial(tfolab_app(self).open_lab, lab, scenario), help=help_text
            )

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        if (score := matcher.match(BENCH_TEXT)) > 0:
            yield Hit(
                score, matcher.highlight(BENCH_TEXT), tfolab_app(self).action_bench, help=BENCH_HELP
            )
        for text, help_text, lab, scenario in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(text),
                    partial(tfolab_app(self).open_lab, lab, scenario),
                    help=help_text,
                )
