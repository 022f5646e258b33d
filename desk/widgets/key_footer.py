"""The footer of keys: one widget, one line, drawn again only when the keys it shows change.

Textual's :class:`~textual.widgets.Footer` is a container of a widget per key: every change of
the keys (a turn that starts or ends, a focus change) restyles, mounts or removes key widgets
and lays the screen out again. That was half of the UI thread's work in the frame that says a
turn ended (about 35 of 66 ms at 2,000 tokens/s on a 2-core machine), and the frame that says
a turn started carried the same. :class:`KeyFooter` is one widget that draws the keys as one
line of text: a change of keys repaints one row, with no layout. It looks like Textual's compact
footer (the key, its description, the palette key on the right after a thin bar) and acts like
it: a click on a key presses it (a bell when it is dimmed), the pointer highlights the key under
it and shows its tooltip.
"""

from __future__ import annotations

from typing import NamedTuple

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget

from desk.widgets._css import css_beside

BAR = "▏"
"""Between the keys and the palette key on the right (Textual's ``vkey`` border)."""


FIRST_ACTION = "stop"
"""The action shown first while it is live (the stop key: a narrow footer cuts the last keys)."""


class ShownKey(NamedTuple):
    """One binding as the footer shows it."""

    key: str
    action: str
    description: str
    key_display: str
    enabled: bool
    tooltip: str


class Span(NamedTuple):
    """Where a shown key sits on the footer's row: columns ``start`` to ``end`` (exclusive)."""

    start: int
    end: int
    key: ShownKey


def shown_keys(screen: Screen[object]) -> tuple[tuple[ShownKey, ...], ShownKey | None]:
    """What a footer on ``screen`` shows: one key per action (its first shown binding, as
    Textual's footer does), in the screen's order but for the stop key, first while it is live,
    and the command palette's key (None when the app has no palette or the screen does not
    bind it)."""
    app = screen.app
    palette_key = app.COMMAND_PALETTE_BINDING if app.ENABLE_COMMAND_PALETTE else None
    keys: dict[str, ShownKey] = {}
    palette: ShownKey | None = None
    for key, (_node, binding, enabled, tooltip) in screen.active_bindings.items():
        if key == palette_key:
            palette = _shown(
                screen, binding, enabled, tooltip or binding.tooltip or binding.description
            )
        elif binding.show and binding.action not in keys:
            keys[binding.action] = _shown(screen, binding, enabled, tooltip)
    shown = list(keys.values())
    first = keys.get(FIRST_ACTION)
    if first is not None and first.enabled:  # a narrow footer cuts the last keys, never this
        shown.remove(first)
        shown.insert(0, first)
    return tuple(shown), palette


def _shown(screen: Screen[object], binding: Binding, enabled: bool, tooltip: str) -> ShownKey:
    return ShownKey(
        binding.key,
        binding.action,
        binding.description,
        screen.app.get_key_display(binding),
        enabled,
        tooltip,
    )


class KeyFooter(Widget, can_focus=False):
    """The keys that work now, on the bottom row (see the module).

    :attr:`keys` and :attr:`palette` are what it shows; :attr:`changes` counts how many times
    that changed (the row is drawn again only then).
    """

    DEFAULT_CSS = css_beside(__file__)
    ALLOW_SELECT = False
    COMPONENT_CLASSES = {
        "key-footer--item",
        "key-footer--key",
        "key-footer--description",
        "key-footer--hover",
        "key-footer--bar",
    }

    def __init__(self) -> None:
        super().__init__()
        self.keys: tuple[ShownKey, ...] = ()
        """The keys shown from the left, in order."""
        self.palette: ShownKey | None = None
        """The command palette's key, shown on the right."""
        self.changes = 0
        """How many times what the footer shows changed."""
        self._spans: list[Span] = []
        self._hover: ShownKey | None = None

    def on_mount(self) -> None:
        # At once, not on the footer's own queue: a frame asked for right after the change
        # (see desk.frame_now) went out with the keys of the state before.
        self.screen.bindings_updated_signal.subscribe(self, self.bindings_changed, immediate=True)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def bindings_changed(self, screen: Screen[object]) -> None:
        """The screen's bindings may have changed: repaint when what is shown differs (before
        the next frame: the keys change in the frame that shows the state they follow)."""
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen:
            return
        keys, palette = shown_keys(screen)
        if (keys, palette) == (self.keys, self.palette):
            return
        self.keys, self.palette = keys, palette
        self.changes += 1
        self.refresh()

    def key_at(self, x: int) -> ShownKey | None:
        """The key drawn at column ``x`` of the row (as last drawn), or None."""
        for span in self._spans:
            if span.start <= x < span.end:
                return span.key
        return None

    def render(self) -> Text:
        width = self.size.width
        left, spans = self._line(self.keys, 0)
        right = Text()
        if self.palette is not None:
            bar = Text(BAR, self.get_component_rich_style("key-footer--bar"))
            face, palette_spans = self._line((self.palette,), 0)
            right = Text.assemble(bar, face)
            start = width - right.cell_len + len(BAR)
            spans = [s for s in spans if s.end <= start - len(BAR)]
            spans += [Span(s.start + start, s.end + start, s.key) for s in palette_spans]
            left.truncate(max(0, width - right.cell_len))
        left.pad_right(max(0, width - left.cell_len - right.cell_len))
        self._spans = spans
        line = Text.assemble(left, right, no_wrap=True, overflow="crop")
        line.stylize_before(self.rich_style)
        return line

    def _line(self, keys: tuple[ShownKey, ...], at: int) -> tuple[Text, list[Span]]:
        """``keys`` drawn as the compact footer draws them (the key, a space, its description,
        and a space before the next), and where each one sits from column ``at``."""
        item = self.get_component_rich_style("key-footer--item")
        key_style = item + self.get_component_rich_style("key-footer--key")
        description_style = item + self.get_component_rich_style("key-footer--description")
        hover = self.get_component_rich_style("key-footer--hover")
        line = Text()
        spans: list[Span] = []
        for shown in keys:
            face = Text.assemble((shown.key_display, key_style))
            if shown.description:
                face.append(" " + shown.description, description_style)
            if shown == self._hover:
                face.stylize(hover)
            if not shown.enabled:
                face.stylize(Style(dim=True))
            width = cell_len(face.plain)
            spans.append(Span(at, at + width, shown))
            line.append_text(face)
            line.append(" ")
            at += width + 1
        return line, spans

    def on_mouse_move(self, event: events.MouseMove) -> None:
        hover = self.key_at(event.x)
        if hover != self._hover:
            self._hover = hover
            self.tooltip = (hover.tooltip or None) if hover is not None else None
            self.refresh()

    def on_leave(self, event: events.Leave) -> None:
        if self._hover is not None:
            self._hover = None
            self.tooltip = None
            self.refresh()

    def on_mouse_down(self, event: events.MouseDown) -> None:
        """A click presses the key under the pointer (a bell when it does nothing now)."""
        shown = self.key_at(event.x)
        if shown is None:
            return
        if shown.enabled:
            self.app.simulate_key(shown.key)
        else:
            self.app.bell()
