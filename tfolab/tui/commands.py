"""Command palette entries: open any lab or any scenario by typing its name.

Rules: built from the app's loaded labs, nothing else; each command calls
App.open_lab, the one way to open a lab.
"""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider


class LabCommands(Provider):
    def _commands(self) -> list[tuple[str, str, str, str | None]]:
        commands: list[tuple[str, str, str, str | None]] = []
        for lab in self.app.labs:  # type: ignore[attr-defined]
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
        for text, help_text, lab, scenario in self._commands():
            yield DiscoveryHit(text, partial(self.app.open_lab, lab, scenario), help=help_text)  # type: ignore[attr-defined]

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, help_text, lab, scenario in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(text),
                    partial(self.app.open_lab, lab, scenario),
                    help=help_text,
                )  # type: ignore[attr-defined]
