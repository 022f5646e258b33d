"""A widget whose children are made on first use, not when it is mounted.

The desk's hidden panels (the console, the compression panel, the sessions sidebar) are on the
main screen from the start but shown only on demand. Composed at once, their children (an
input line, a list, a progress bar, buttons) were registered, styled and had their widgets' CSS
parsed before the app's first frame: about a third of the app's own start-up work. A panel
built on :class:`LazyChildren` composes nothing when mounted; its children are made the first
time it is used (:meth:`LazyChildren.make_children`), and look the same from then on.
"""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.compose import compose
from textual.widget import Widget


class LazyChildren(Widget):
    """Mixin for a widget whose :meth:`children_to_make` are made on first use.

    A subclass puts what its ``compose`` would yield in :meth:`children_to_make`, and calls
    :meth:`make_children` before it reaches any of them (its accessors do). Made before the
    widget is composed, they are composed with it, as any widget's children.

    List it after the widget's Textual base (``class Panel(Vertical, LazyChildren)``): Textual
    inherits default CSS along the first base only, and would drop the container's.
    """

    _asked = False
    _composed = False
    _mounted_early = False
    _told = False

    def compose(self) -> ComposeResult:
        self._composed = True
        if self._asked and not self._mounted_early:
            yield from self.children_to_make()

    def children_to_make(self) -> ComposeResult:
        """The children, as ``compose`` would yield them (override)."""
        return iter(())

    def children_made(self) -> None:
        """Called once, when the children are in this widget (queries find them; made on first
        use, their own mounting may still follow) (override)."""

    @property
    def has_children_made(self) -> bool:
        """True once :meth:`make_children` was called."""
        return self._asked

    def make_children(self) -> None:
        """Make the children now, once (idempotent). In the DOM, composed or not yet (a
        busy machine may bring the first use before the widget's own compose), they are
        mounted at once and queries find them; not in the DOM yet, they are made when the
        widget is composed."""
        if self._asked:
            return
        self._asked = True
        if self._composed or self.is_attached:
            self._mounted_early = not self._composed
            self.mount_all(compose(self, self.children_to_make()))
            self._tell()

    def _on_mount(self, event: events.Mount) -> None:
        # Textual calls each class's handler: Widget's own runs too. Children made before
        # the widget was composed were composed with it, and are mounted now.
        if self._asked:
            self._tell()

    def _tell(self) -> None:
        if not self._told:
            self._told = True
            self.children_made()
