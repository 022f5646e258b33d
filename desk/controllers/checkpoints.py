"""``/undo`` and ``/diff``: a session's changes to the workspace, undone or shown.

``/undo`` asks the gateway (``session.undo``) to put back the files of the session's last turn
that changed any, and shows in the transcript what it did: one line naming the turn, the
files restored and those removed (the turn had created them), the diff it reverted
(coloured, in a box that scrolls), and one error line per file it left as it is (changed
outside desk since the turn). ``/diff`` (``session.diff``) shows what the session's turns
changed so far, the undone ones left out.

The gateway reads and writes the disk; the call runs off the UI thread so a large workspace
never holds a key press.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from contract.errors import GatewayError

if TYPE_CHECKING:
    from contract.ports import DeskGateway
    from contract.results import UndoResult
    from desk.controllers.view import ShownSession


def _files(names: list[str], most: int = 4) -> str:
    shown = ", ".join(names[:most])
    more = len(names) - most
    return f"{shown} and {more} more" if more > 0 else shown


def undone_files(result: UndoResult) -> str:
    """What an undo did to the files, as its line says it: ``restored a.txt · removed
    made.txt`` (a file the turn created was removed, not restored); ``restored none`` when
    every file already held what it held before."""
    done = [
        f"{verb} {_files(names)}"
        for verb, names in (("restored", result.restored), ("removed", result.removed))
        if names
    ]
    return " · ".join(done) or "restored none"


NOT_UNDONE_HINT = (
    "the turn stays the next to undo: put those files back as it left them (or keep your "
    "changes and leave it), then /undo again"
)
"""Said under an undo that could not put every file back."""


class CheckpointsController:
    """Runs ``/undo`` and ``/diff`` for the session a view shows.

    Args:
        gateway: the gateway (``session.undo``, ``session.diff``).
    """

    def __init__(self, gateway: DeskGateway) -> None:
        self._gateway = gateway

    async def undo(self, view: ShownSession) -> None:
        """Undo the session's last turn that changed files, and show what it did."""
        from desk.widgets.change_preview import ChangePreview

        try:
            result = await asyncio.to_thread(self._gateway.session_undo, view.session_id)
        except GatewayError as exc:
            await view.add_note(f"✖ undo: {exc.message}", error=True, scroll=True)
            return
        if not result.turn_id:
            await view.add_note(
                "nothing to undo: no turn of this session changed a file (or all were undone)",
                scroll=True,
            )
            return
        prompt = result.prompt if len(result.prompt) <= 60 else result.prompt[:59] + "…"
        if result.undone:
            line = f"↶ undid the turn “{prompt}”: {undone_files(result)}"
            await view.add_note(line, scroll=True)
        elif result.restored or result.removed:
            line = f"✖ undid the turn “{prompt}” in part: {undone_files(result)}"
            await view.add_note(line, error=True, scroll=True)
        else:
            await view.add_note(f"✖ not undone: the turn “{prompt}”", error=True, scroll=True)
        if result.diff:
            await view.transcript.mount(ChangePreview(result.diff, "diff"))
        for line in result.not_restored:
            await view.add_note(f"✖ not restored: {line}", error=True)
        if not result.undone:
            await view.add_note(NOT_UNDONE_HINT)
        elif result.remaining:
            turns = "turn" if result.remaining == 1 else "turns"
            await view.add_note(
                f"/undo again undoes the one before ({result.remaining} {turns} left)"
            )
        view.transcript.scroll_end(animate=False)

    async def diff(self, view: ShownSession) -> None:
        """Show what the session's turns changed in the workspace."""
        from desk.widgets.change_preview import ChangePreview

        try:
            result = await asyncio.to_thread(self._gateway.session_diff, view.session_id)
        except GatewayError as exc:
            await view.add_note(f"✖ diff: {exc.message}", error=True, scroll=True)
            return
        if not result.files:
            await view.add_note("no changes: this session's turns changed no file", scroll=True)
            return
        noun = "file" if len(result.files) == 1 else "files"
        head = f"± this session changed {len(result.files)} {noun}: {_files(result.files)}"
        await view.add_note(f"{head} (+{result.added:,} −{result.removed:,} lines)", scroll=True)
        await view.transcript.mount(ChangePreview(result.diff, "diff"))
        view.transcript.scroll_end(animate=False)
