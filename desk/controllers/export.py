"""``/export [PATH]``: the session shown, written as Markdown (see :mod:`desk.export`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from contract.errors import GatewayError
from desk.receipts import ReceiptFormatter, format_stop_receipt

if TYPE_CHECKING:
    from contract.ports import DeskGateway
    from desk.controllers.view import ShownSession

WallClock = Callable[[], datetime]
"""Returns the local time now (``datetime.now`` or a test's pinned time)."""


class ExportController:
    """Writes the session a view shows to a Markdown file, atomically, and says where.

    Args:
        gateway: the gateway (``session.list`` gives the session's title as it is now).
        model: the model shown for the session.
        format_receipt: how stop receipts read (messages of a resumed session not rendered
            yet are exported as they would be shown).
        wall_clock: local time for export names and headers.
    """

    def __init__(
        self,
        gateway: DeskGateway,
        *,
        model: Callable[[], str],
        format_receipt: ReceiptFormatter = format_stop_receipt,
        wall_clock: WallClock = datetime.now,
    ) -> None:
        self._gateway = gateway
        self._model = model
        self._format_receipt = format_receipt
        self.wall_clock = wall_clock
        """Local time for export names and headers (tests pin it)."""

    def title_of(self, session_id: str) -> str:
        """The session's title as the gateway has it now ("" when it has none or the list
        cannot be read: the export is headed by the session's id then)."""
        try:
            sessions = self._gateway.session_list()
        except GatewayError:
            return ""
        return next((s.title for s in sessions if s.session_id == session_id), "")

    async def export(self, view: ShownSession, path: str = "") -> None:
        """Write the view's session to ``path`` ("" for ``./desk-<session>-<date>.md``)."""
        # imported here: they read the reply widgets, which load Markdown (not before the
        # first frame)
        from desk.export import blocks_from, resolve_export_path, session_markdown, write_export
        from desk.saved_blocks import saved_blocks, with_replaced

        now = self.wall_clock()
        target = resolve_export_path(path, view.session_id, now, Path.cwd())
        earlier = saved_blocks(view.earlier, 0, self._format_receipt)  # above "show more"
        # a summary of a resumed session: the messages it replaced above it, as they were shown
        shown = with_replaced([*earlier, *view.transcript.children], self._format_receipt)
        blocks = blocks_from(shown)
        markdown = session_markdown(
            blocks,
            session_id=view.session_id,
            model=self._model(),
            exported_at=now,
            title=self.title_of(view.session_id),
            usage=view.usage,
        )
        try:
            write_export(target, markdown)
        except OSError as exc:
            why = exc.strerror or str(exc)
            await view.add_note(
                f"✖ export failed: cannot write {target}: {why}", error=True, scroll=True
            )
            return
        count = sum(block.kind != "error" for block in blocks)
        noun = "block" if count == 1 else "blocks"
        await view.add_note(f"⇩ exported {count} {noun} to {target}", scroll=True)
