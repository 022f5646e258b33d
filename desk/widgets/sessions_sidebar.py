"""The sessions sidebar (Ctrl+B): saved and live sessions; open, rename, delete.

The sidebar only shows and asks: it posts :class:`SessionsSidebar.OpenRequested`,
:class:`SessionsSidebar.RenameRequested` and :class:`SessionsSidebar.DeleteRequested`; the app
talks to the gateway (see :mod:`desk.controllers.sessions`) and hands the list back with
:meth:`SessionsSidebar.show`. Its heading, list and rename box are made the first time it is used
(:mod:`desk.widgets.lazy_children`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, ListView, Static

from contract.results import SessionInfo
from contract.text import terminal_safe
from desk.widgets._css import css_beside
from desk.widgets.lazy_children import LazyChildren
from desk.widgets.session_item import UNTITLED, SessionItem

HINT = "enter open · r rename · d delete"
"""The key hint under the list."""


class SessionsSidebar(Vertical, LazyChildren):
    """The sidebar.

    Args:
        id: the widget id.
    """

    DEFAULT_CSS = css_beside(__file__)

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "rename", "Rename"),
        Binding("d", "delete", "Delete"),
    ]

    class OpenRequested(Message):
        """Enter on a session: show it."""

        def __init__(self, session_id: str) -> None:
            super().__init__()
            self.session_id = session_id
            """The session."""

    class RenameRequested(Message):
        """A new title was typed for a session."""

        def __init__(self, session_id: str, title: str) -> None:
            super().__init__()
            self.session_id = session_id
            """The session."""
            self.title = title
            """The new title."""

    class DeleteRequested(Message):
        """``d`` on a session (the app asks for a confirmation)."""

        def __init__(self, session_id: str, title: str) -> None:
            super().__init__()
            self.session_id = session_id
            """The session."""
            self.title = title
            """Its title, for the confirmation."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._renaming: str | None = None

    def children_to_make(self) -> ComposeResult:
        yield Static("Sessions", classes="heading", markup=False)
        yield ListView(id="session-list")
        yield Static("", classes="error", markup=False)
        yield Input(id="session-rename", placeholder="new title · Enter saves", compact=True)
        yield Static(HINT, classes="hint", markup=False)

    @property
    def list_view(self) -> ListView:
        """The list of sessions."""
        self.make_children()
        return self.query_one("#session-list", ListView)

    @property
    def is_open(self) -> bool:
        """True while the sidebar is shown."""
        return self.has_class("-open")

    def open(self) -> None:
        """Show the sidebar and focus the list."""
        self.add_class("-open")
        self.list_view.focus()

    def close(self) -> None:
        """Hide the sidebar."""
        self.remove_class("-open")
        self._end_rename()

    @property
    def items(self) -> list[SessionItem]:
        """The entries shown, top to bottom."""
        return list(self.list_view.query(SessionItem))

    def selected(self) -> SessionItem | None:
        """The highlighted entry, if any."""
        item = self.list_view.highlighted_child
        return item if isinstance(item, SessionItem) else None

    async def show(
        self, sessions: Sequence[SessionInfo], *, current: str | None, now: float, error: str = ""
    ) -> None:
        """Replace the list (keeping the highlight on the same session when it is still there).

        Args:
            sessions: from ``session.list``, most recent first.
            current: the session the desk shows.
            now: unix seconds now.
            error: one line when the list could not be read ("" for none).
        """
        keep = self.selected()
        keep_id = keep.info.session_id if keep is not None else current
        view = self.list_view
        await view.clear()
        items = [
            SessionItem(info, now=now, current=info.session_id == current) for info in sessions
        ]
        await view.extend(items)
        ids = [info.session_id for info in sessions]
        if ids:
            view.index = ids.index(keep_id) if keep_id in ids else 0
        label = self.query_one(".error", Static)  # made with the list
        label.update(terminal_safe(error))
        self.set_class(bool(error), "-error")

    def on_list_view_selected(self, event: ListView.Selected) -> None:
        """Enter (or a click) on a session."""
        event.stop()
        item = event.item
        if isinstance(item, SessionItem):
            self.post_message(self.OpenRequested(item.info.session_id))

    def action_rename(self) -> None:
        """``r``: type a new title for the highlighted session."""
        item = self.selected()
        if item is None:
            return
        self._renaming = item.info.session_id  # the list is made: so is the rename box
        box = self.query_one("#session-rename", Input)
        box.value = item.info.title
        self.add_class("-renaming")
        box.focus()

    def action_delete(self) -> None:
        """``d``: delete the highlighted session (after a confirmation)."""
        item = self.selected()
        if item is not None:
            title = item.info.title or UNTITLED
            self.post_message(self.DeleteRequested(item.info.session_id, title))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the rename box."""
        event.stop()
        session_id = self._renaming
        self._end_rename()
        self.list_view.focus()
        if session_id is not None and event.value.strip():
            self.post_message(self.RenameRequested(session_id, event.value))

    def on_key(self, event: events.Key) -> None:
        """Esc in the rename box gives up the rename (when Esc has nothing to stop)."""
        if event.key == "escape" and self._renaming is not None:
            self._end_rename()
            self.list_view.focus()

    def _end_rename(self) -> None:
        self._renaming = None
        self.remove_class("-renaming")
