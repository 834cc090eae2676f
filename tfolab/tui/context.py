"""Typed access to the running TfolabApp from screens and providers.

Textual types `self.app` as a plain App; what tfolab's app shares (labs, the
kernel HZ, the real-run status, the backend, `open_lab`) is reached through
`tfolab_app(node)`, one cast in one place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from tfolab.tui.app import TfolabApp


def tfolab_app(node: Any) -> TfolabApp:
    """The TfolabApp that `node` (a screen, widget or command provider) belongs to."""
    return cast("TfolabApp", node.app)
