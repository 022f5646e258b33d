"""``/export [PATH]``: the session shown, written as Markdown (see :mod:`desk.export`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from desk.export import blocks_from, resolve_export_path, session_markdown, write_export

if TYPE_CHECKING:
    from desk.widgets.session_view import SessionView

WallClock = Callable[[], datetime]
"""Returns the local time now (``datetime.now`` or a test's pinned time)."""


class ExportController:
    """Writes the session a view shows to a Markdown file, atomically, and says where.

    Args:
        model: the model shown for the session.
        wall_clock: local time for export names and headers.
    """

    def __init__(self, *, model: Callable[[], str], wall_clock: WallClock = datetime.now) -> None:
        self._model = model
        self.wall_clock = wall_clock
        """Local time for export names and headers (tests pin it)."""

    async def export(self, view: SessionView, path: str = "") -> None:
        """Write the view's session to ``path`` ("" for ``./desk-<session>-<date>.md``)."""
        now = self.wall_clock()
        target = resolve_export_path(path, view.session_id, now, Path.cwd())
        blocks = blocks_from(view.transcript.children)
        markdown = session_markdown(
            blocks, session_id=view.session_id, model=self._model(), exported_at=now
        )
        try:
            write_export(target, markdown)
        except OSError as exc:
            why = exc.strerror or str(exc)
            await view.add_note(
                f"✖ export failed: cannot write {target}: {why}", error=True, scroll=True
            )
            return
        count = sum(block.kind in ("user", "assistant") for block in blocks)
        noun = "block" if count == 1 else "blocks"
        await view.add_note(f"⇩ exported {count} {noun} to {target}", scroll=True)
