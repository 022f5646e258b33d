"""The sessions sidebar (Ctrl+B): saved and live sessions; open, rename, delete.

The sidebar only shows and asks: it posts :class:`SessionsSidebar.OpenRequested`,
:class:`SessionsSidebar.RenameRequested` and :class:`SessionsSidebar.DeleteRequested`; the app
talks to the gateway (see :mod:`desk.controllers.sessions`) and hands the list back with
:meth:`SessionsSidebar.show`. Its heading, list and rename box are made the first time it is used
(:mod:`desk.widgets.lazy_children`).

Its keys type no letter: Enter opens, Ctrl+R renames, Delete deletes, and every printable key
goes on to the prompt box (:mod:`desk.screens.desk_screen`), so a word typed with the sidebar
open arrives whole. Ctrl+R renames wherever the focus is while the sidebar is open (the prompt
box hands it here: :meth:`SessionsSidebar.take_key`), the session shown when the list is not
read yet (Ctrl+B, Ctrl+R and a title in one burst). Keys act in the queue they came to, in
the order they were typed: the keys typed in the same burst after Ctrl+R, which still come to
the list or the prompt box, go to the rename box behind it (:mod:`desk.widgets.key_order`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
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
from desk.widgets.key_order import run_own_binding, type_into
from desk.widgets.lazy_children import LazyChildren
from desk.widgets.session_item import UNTITLED, SessionItem

HINT = "⏎ open · ^r rename · del delete"
"""The key hint under the list (it fits the sidebar's width, 36 columns)."""


class SessionList(ListView):
    """The list of sessions; each key it is given goes first to ``take_key``.

    Args:
        take_key: acts on a key now, in order with the keys around it; True when it did (the
            key then goes no further).
        id: the widget id.
    """

    def __init__(self, take_key: Callable[[events.Key], Awaitable[bool]], *, id: str) -> None:
        super().__init__(id=id)
        self._take_key = take_key

    async def _on_key(self, event: events.Key) -> None:
        if await self._take_key(event):
            event.stop()
            event.prevent_default()
        else:
            await super()._on_key(event)


class RenameBox(Input):
    """The rename box: its own keys (Backspace, Ctrl+U, Enter...) act in the order they were
    typed, with the characters around them (:mod:`desk.widgets.key_order`)."""

    def __init__(self) -> None:
        super().__init__(
            id="session-rename",
            placeholder="new title · Enter saves",
            compact=True,
            select_on_focus=False,  # the sidebar selects the old title as the rename starts
        )

    async def _on_key(self, event: events.Key) -> None:
        if await type_into(self, event):
            event.stop()
            event.prevent_default()
        else:
            await super()._on_key(event)


class SessionsSidebar(Vertical, LazyChildren):
    """The sidebar.

    Args:
        id: the widget id.
    """

    DEFAULT_CSS = css_beside(__file__)

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "rename", "Rename", key_display="^r"),
        Binding("delete", "delete", "Delete", key_display="Del"),
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
        """Delete on a session (the app asks for a confirmation)."""

        def __init__(self, session_id: str, title: str) -> None:
            super().__init__()
            self.session_id = session_id
            """The session."""
            self.title = title
            """Its title, for the confirmation."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._renaming: str | None = None
        self._current: str | None = None  # the session shown, as the list was last shown
        self._shown: str | None = None  # the session the desk showed when the sidebar opened
        self._showing = asyncio.Lock()  # one list replaced at a time (two made it twice as long)
        self.type_text: Callable[[events.Key], bool] = lambda _event: False
        """Types a printable key where text goes (the prompt box); True when it did. Set by
        the screen; the list calls it in its own queue, before the keys behind it act."""
        self.follow_focus: Callable[[events.Key], bool] = lambda _event: False
        """Hands a key to the widget that has the focus now, in order; True when it did. Set
        by the screen (see :meth:`_list_key`)."""

    def children_to_make(self) -> ComposeResult:
        yield Static("Sessions", classes="heading", markup=False)
        yield SessionList(self._list_key, id="session-list")
        yield Static("", classes="error", markup=False)
        yield RenameBox()
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

    def open(self, shown: str | None = None) -> None:
        """Show the sidebar and focus the list (unless a rename began meanwhile).

        Args:
            shown: the session the desk shows (Ctrl+R renames it while the list is not read).
        """
        self._shown = shown
        self.add_class("-open")
        self.make_children()  # the list and the rename box, now
        self.app.call_later(self._focus_list)

    def _focus_list(self) -> None:
        if self.is_open and self._renaming is None:
            self.screen.set_focus(self.list_view)

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
        """Replace the list, keeping the highlight on the same session when it is still there,
        or moving it to ``current`` when the desk shows another session than the last time.

        Args:
            sessions: from ``session.list``, most recent first.
            current: the session the desk shows.
            now: unix seconds now.
            error: one line when the list could not be read ("" for none).
        """
        async with self._showing:
            await self._show(sessions, current=current, now=now, error=error)

    async def _show(
        self, sessions: Sequence[SessionInfo], *, current: str | None, now: float, error: str
    ) -> None:
        keep = self.selected()
        moved = current != self._current  # the desk shows another session: follow it
        keep_id = keep.info.session_id if keep is not None and not moved else current
        self._current = current
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

    async def take_key(self, event: events.Key) -> bool:
        """A key that came to the prompt box while the sidebar is open: during a rename it
        goes to the rename box (typed before the focus reached it), and Ctrl+R starts one.
        True when the key was taken (the box then does nothing with it)."""
        if not self.is_open or not self.has_children_made:
            return False
        if self._renaming is not None:
            return await type_into(self.query_one(RenameBox), event)
        if event.key == "ctrl+r":
            self.action_rename()
            return True
        return False

    async def _list_key(self, event: events.Key) -> bool:
        """A key that came to the list: during a rename it goes to the rename box (typed
        before the focus reached it); otherwise the list's own keys (Up, Down, Enter...),
        Ctrl+R and Delete act now, and a letter is typed into the prompt box now, all in
        order with the keys around them (bubbled up, a letter or an arrow acted after the keys
        typed behind it: ``Down Delete`` offered to delete the session above). True when the
        key was taken."""
        if self._renaming is not None:
            return await type_into(self.query_one(RenameBox), event)
        if self.screen.focused is not self.list_view and self.follow_focus(event):
            # An earlier key of this burst was typed into the prompt box and took the focus
            # there: the keys behind it follow it (its Enter opened the highlighted session,
            # and the next prompt was typed onto this one: "first promptsecond").
            return True
        if await run_own_binding(self.list_view, event) or await run_own_binding(self, event):
            return True
        return self.type_text(event)

    def action_rename(self) -> None:
        """Ctrl+R: type a new title for the highlighted session (its old title selected, so
        typing replaces it); before the list is read, for the session the desk shows."""
        item = self.selected()
        if item is None and self._shown is not None:  # the list not read (or highlighted) yet
            listed = (i for i in self.items if i.info.session_id == self._shown)
            item = next(listed, None)
            session_id, title = self._shown, item.info.title if item is not None else ""
        elif item is not None:
            session_id, title = item.info.session_id, item.info.title
        else:
            return
        self._renaming = session_id  # the list is made: so is the rename box
        box = self.query_one(RenameBox)
        box.value = title
        box.action_select_all()
        self.add_class("-renaming")
        # At once: the keys typed after Ctrl+R that come to the box itself must find it focused.
        self.screen.set_focus(box)

    def action_delete(self) -> None:
        """Delete: delete the highlighted session (after a confirmation)."""
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
