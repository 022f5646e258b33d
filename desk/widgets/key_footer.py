"""The footer of keys, rebuilt only when the keys it shows change.

Textual's :class:`~textual.widgets.Footer` rebuilds all its keys (a widget each, styled and
mounted anew) every time the screen says its bindings may have changed: a focus change, a
watched state, a turn that starts or ends, often several times for one change. On a busy
machine that rebuilding was a fifth of the UI thread's work in the second after a stop, ahead
of the frame that says "idle". :class:`KeyFooter` remembers what it showed (each shown key,
its label, whether it is enabled) and rebuilds only when that differs, in the frame that shows
the change rather than the one after.
"""

from __future__ import annotations

from collections.abc import Hashable

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer


def shown_keys(screen: Screen[object], show_palette: bool) -> tuple[Hashable, ...]:
    """What a footer on ``screen`` shows: per shown binding its key, action, label, display,
    group, whether it is enabled and its tooltip; then whether the palette key is shown."""
    keys: list[Hashable] = []
    for _node, binding, enabled, tooltip in screen.active_bindings.values():
        if binding.show:
            group = binding.group.description if binding.group is not None else None
            keys.append(
                (
                    binding.key,
                    binding.action,
                    binding.description,
                    binding.key_display,
                    group,
                    enabled,
                    tooltip,
                )
            )
    keys.append(show_palette)
    return tuple(keys)


class KeyFooter(Footer):
    """:class:`~textual.widgets.Footer` that rebuilds only when the keys it shows change."""

    def __init__(self, *, compact: bool = False) -> None:
        super().__init__(compact=compact)
        self._shown: tuple[Hashable, ...] | None = None

    def compose(self) -> ComposeResult:
        if self._bindings_ready:
            self._shown = shown_keys(self.screen, self.show_command_palette)
        yield from super().compose()

    def bindings_changed(self, screen: Screen[object]) -> None:
        """Rebuild when what is shown changes, before the next frame (Textual's footer waits
        for the frame after it: the idle keys came a frame behind "idle"); else nothing."""
        self._bindings_ready = True
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen:
            return
        wanted = shown_keys(screen, self.show_command_palette)
        if wanted == self._shown:
            return
        self._shown = wanted
        self.call_later(self.recompose)
