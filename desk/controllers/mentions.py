"""``@`` in the prompt box: a list of the workspace's files to mention, and Tab to insert one.

While the word at the cursor is ``@something`` (at the start of a line or after a space), the
gateway is asked for the workspace's files that match it (``workspace.files``, fuzzy, git's list
when the workspace is a repository) off the UI thread, and the list shows above the box. Tab
replaces ``@something`` with ``@path `` of the first match (``@"path" `` when the name holds
a space, :func:`agent.context.mention_spelling.spelled`); Tab again,
before anything else is typed, puts the next match in its place. The files themselves are
attached by the gateway when the prompt is sent (:mod:`agent.context.mentions`).
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING

from textual.widget import Widget

from agent.context.mention_spelling import spelled
from contract.errors import GatewayError
from desk.widgets.mention_list import MentionList
from desk.widgets.prompt_input import PromptInput

if TYPE_CHECKING:
    from contract.ports import DeskGateway

AT_CURSOR = re.compile(r'(?:^|(?<=\s))@(?:"([^"\n]*)|((?:[^\s"\\]|\\ )*))$')
"""An ``@`` mention being typed (``@path`` or ``@"path``): what is before the cursor on its
line ends with it."""

LISTED = 50
"""Most files asked of the gateway for one list."""


def mention_at(line_before_cursor: str) -> tuple[int, str] | None:
    """The column of the ``@`` and the query typed after it, when the text before the cursor
    ends with a mention being typed; else None."""
    found = AT_CURSOR.search(line_before_cursor)
    if found is None:
        return None
    quoted = found.group(1)
    return found.start(), quoted if quoted is not None else found.group(2).replace("\\ ", " ")


class MentionController:
    """Keeps the mention list in step with the prompt box and inserts a path on Tab.

    Args:
        gateway: asked for the workspace's files (``workspace_files``).
        prompt: the prompt box.
    """

    def __init__(self, gateway: DeskGateway, prompt: PromptInput) -> None:
        self._gateway = gateway
        self._prompt = prompt
        self._list: MentionList | None = None
        self._query: str | None = None  # the mention being typed, as last looked up
        self._paths: list[str] = []
        self._paths_for: str | None = None  # the query ``_paths`` match
        self._index = -1  # the match Tab inserted last (-1: none yet)
        self._inserted: tuple[tuple[int, int], tuple[int, int], str] | None = None

    @property
    def mention_list(self) -> MentionList:
        """The list above the box (mounted beside the box when first used)."""
        if self._list is None:
            self._list = MentionList()
            parent = self._prompt.parent
            container = parent if isinstance(parent, Widget) else self._prompt.screen
            container.mount(self._list)
        return self._list

    def changed(self) -> None:
        """The prompt box's text changed: show, update or hide the list."""
        if self._inserted is not None and self._prompt.text == self._inserted[2]:
            return  # the text Tab left: Tab again goes to the next match
        self._inserted, self._index = None, -1
        found = self._typed()
        if found is None:
            self._query = None
            if self._list is not None:
                self._list.hide()
            return
        query = found[1]
        if query != self._query:
            self._query = query
            self._prompt.run_worker(self._look_up(query), group="mentions", exclusive=True)

    def complete(self) -> bool:
        """Tab: insert the next match in place of the mention; True when it did.

        Tab may come in the same burst as the mention's last characters, before the look-up
        of what they spell ran (or even before the box told this controller they changed):
        then the files are asked for here, at once, so the match is the mention's own.
        """
        prompt = self._prompt
        if self._inserted is not None and prompt.text == self._inserted[2]:
            start, end, _text = self._inserted
        else:
            found = self._typed()
            if found is None:
                return False
            if found[1] != self._paths_for:
                self._query = found[1]
                self._paths, self._paths_for = self._files(found[1]), found[1]
            row, _column = prompt.cursor_location
            start, end = (row, found[0]), prompt.cursor_location
            self._index = -1
        if not self._paths:
            return False
        self._index = (self._index + 1) % len(self._paths)
        path = spelled(self._paths[self._index])
        result = prompt.replace(f"@{path} ", start, end, maintain_selection_offset=False)
        prompt.move_cursor(result.end_location)
        self._inserted = (start, result.end_location, prompt.text)
        self._show()
        return True

    def _typed(self) -> tuple[int, str] | None:
        row, column = self._prompt.cursor_location
        line = self._prompt.document.get_line(row)
        return mention_at(line[:column])

    def _files(self, query: str) -> list[str]:
        """The workspace's files matching ``query`` (at most :data:`LISTED`; [] when the
        gateway cannot say)."""
        try:
            return self._gateway.workspace_files(query, LISTED)
        except GatewayError:
            return []

    async def _look_up(self, query: str) -> None:
        paths = await asyncio.to_thread(self._files, query)
        if query != self._query:
            return  # typed on meanwhile: a newer look-up shows its own
        self._paths, self._paths_for = paths, query
        self._show()

    def _show(self) -> None:
        shown = self.mention_list
        selected = self._index if self._index >= 0 else None
        shown.show_paths(self._query or "", self._paths, selected)
        parent = self._prompt.parent
        anchor = (
            parent if isinstance(parent, Widget) and parent is not self._prompt.screen else None
        )
        shown.place_above(anchor or self._prompt)
