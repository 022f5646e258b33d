"""One session in the sessions sidebar: its title, then model, age and whether a turn runs."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import ListItem, Static

from contract.results import SessionInfo
from contract.text import terminal_safe
from desk.widgets._css import css_beside

UNTITLED = "(new session)"
"""The title shown for a session that has none yet."""


def relative_time(then: float | None, now: float) -> str:
    """How long ago ``then`` was, as people say it.

    Args:
        then: unix seconds, or None for never saved.
        now: unix seconds now.

    Returns:
        ``"just now"``, ``"5 min ago"``, ``"3 h ago"``, ``"2 d ago"``, ``"7 w ago"``, or
        ``"not saved"`` for None.
    """
    if then is None:
        return "not saved"
    seconds = max(0.0, now - then)
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86_400:
        return f"{int(seconds // 3600)} h ago"
    if seconds < 14 * 86_400:
        return f"{int(seconds // 86_400)} d ago"
    return f"{int(seconds // (7 * 86_400))} w ago"


class SessionItem(ListItem):
    """A sidebar entry.

    Args:
        info: the session, from ``session.list``.
        now: unix seconds now (for the age).
        current: True for the session the desk shows.
    """

    DEFAULT_CSS = css_beside(__file__)

    def __init__(self, info: SessionInfo, *, now: float, current: bool = False) -> None:
        classes = " ".join(
            name for name, on in (("-current", current), ("-running", info.running)) if on
        )
        super().__init__(classes=classes)
        self.info = info
        """The session."""
        self._now = now

    def compose(self) -> ComposeResult:
        info = self.info
        marker = "● " if info.running else ""
        title = terminal_safe(info.title or UNTITLED)  # a title may come from a first prompt
        yield Static(marker + title, classes="title", markup=False)
        meta = f"{terminal_safe(info.model)} · {relative_time(info.updated_at, self._now)}"
        if info.running:
            meta += " · running"
        yield Static(meta, classes="meta", markup=False)
