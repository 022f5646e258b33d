"""MCP servers on screen: a failed server is one line in the transcript and in the status bar.

The gateway publishes each server's state as ``mcp.server`` (a subscriber that comes later gets
each server's latest state first). A ``failed`` one adds ``mcp: NAME failed: ...`` to the
transcript of the session shown and keeps it in the status bar until the server is ready again;
``/mcp`` (a console command) lists them all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from contract.mcp_events import McpServerChanged
from desk.controllers.ports import Notify
from desk.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from desk.controllers.view import ShownSession


class McpController:
    """Keeps what the desk shows of the MCP servers.

    Args:
        status: the status bar (its ``mcp`` line).
        view: the view of the session shown now, if any.
        notify: shows a toast (when no session is shown).
    """

    def __init__(
        self, status: StatusBar, view: Callable[[], ShownSession | None], notify: Notify
    ) -> None:
        self._status = status
        self._view = view
        self._notify = notify
        self._failed: dict[str, str] = {}
        self._running: set[str] = set()

    @property
    def running(self) -> int:
        """How many MCP servers are starting or ready now (as their events said)."""
        return len(self._running)

    async def changed(self, payload: McpServerChanged) -> None:
        """``mcp.server``: note a failure once; clear it when the server is back."""
        line = payload.line
        if payload.state in ("ready", "starting"):
            self._running.add(payload.name)
        else:
            self._running.discard(payload.name)
        if payload.state == "failed":
            if self._failed.get(payload.name) == line:
                return
            self._failed[payload.name] = line
        elif payload.state in ("ready", "starting"):
            self._failed.pop(payload.name, None)
        if self._status.is_attached:
            self._status.mcp = " · ".join(self._failed.values())
        if payload.state != "failed":
            return
        view = self._view()
        if view is not None:
            await view.add_note(f"⚠ {line}", error=True)
        else:
            self._notify(line, title="MCP server failed", severity="warning")
