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

from typing import NamedTuple

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


class ShownKey(NamedTuple):
    """One binding as a footer shows it."""

    key: str
    action: str
    description: str
    key_display: str | None
    group: str | None
    enabled: bool
    tooltip: str
    binding: Binding


def shown_keys(screen: Screen[object], show_palette: bool) -> tuple[tuple[ShownKey, ...], bool]:
    """What a footer on ``screen`` shows: each shown binding (its key, action, label, display,
    group, whether it is enabled and its tooltip), and whether the palette key is shown."""
    keys: list[ShownKey] = []
    for _node, binding, enabled, tooltip in screen.active_bindings.values():
        if binding.show:
            group = binding.group.description if binding.group is not None else None
            keys.append(
                ShownKey(
                    binding.key,
                    binding.action,
                    binding.description,
                    binding.key_display,
                    group,
                    enabled,
                    tooltip,
                    binding,
                )
            )
    return tuple(keys), show_palette


class KeyFooter(Footer):
    """:class:`~textual.widgets.Footer` that rebuilds only when the keys it shows change."""

    def __init__(self, *, compact: bool = False) -> None:
        super().__init__(compact=compact)
        self._shown: tuple[tuple[ShownKey, ...], bool] | None = None

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
        before, self._shown = self._shown, wanted
        if before is None or not self._relabel(before, wanted):
            self.call_later(self.recompose)

    def _relabel(
        self, before: tuple[tuple[ShownKey, ...], bool], wanted: tuple[tuple[ShownKey, ...], bool]
    ) -> bool:
        """Show ``wanted`` with the key widgets there are: each gets its new key, label, action,
        state and tooltip in place, the ones left over go and the missing ones are mounted
        (a turn that ends: Queue becomes Send, Steer and Stop+send go, Stop is dimmed).
        False when that cannot be done (grouped keys, the palette key coming or going): then
        the footer is rebuilt.

        Mounting a footer's worth of keys (each styled anew) was most of the UI's work in the
        frame that says a turn ended."""
        if before[1] != wanted[1] or any(k.group is not None for k in before[0] + wanted[0]):
            return False  # grouped keys: Footer lays them out its own way
        faces: dict[str, ShownKey] = {}  # one key per action, the first binding's (as Footer)
        for shown_key in wanted[0]:
            faces.setdefault(shown_key.action, shown_key)
        keys = [k for k in self.query_children(FooterKey) if not k.has_class("-command-palette")]
        for widget, face in zip(keys, faces.values(), strict=False):
            self._set_face(widget, face)
        for widget in keys[len(faces) :]:
            widget.remove()
        more = [self._new_key(face) for face in list(faces.values())[len(keys) :]]
        if more:
            palette = [k for k in self.query_children(FooterKey) if k not in keys]
            self.mount(*more, before=palette[0] if palette else None)
        self.styles.grid_size_columns = len(faces)
        return True

    def _set_face(self, widget: FooterKey, face: ShownKey) -> None:
        display = self.app.get_key_display(face.binding)
        if (widget.key, widget.key_display, widget.description) != (
            face.key,
            display,
            face.description,
        ):
            widget.key, widget.key_display = face.key, display
            widget.description = face.description
            widget.refresh(layout=True)
        widget.action = face.action
        if widget.has_class("-disabled") == face.enabled:  # as FooterKey marks it
            widget._disabled = not face.enabled
            widget.set_class(not face.enabled, "-disabled")
        if widget.tooltip != (face.tooltip or None):
            widget.tooltip = face.tooltip or None

    def _new_key(self, face: ShownKey) -> FooterKey:
        return FooterKey(
            face.key,
            self.app.get_key_display(face.binding),
            face.description,
            face.action,
            disabled=not face.enabled,
            tooltip=face.tooltip,
        ).data_bind(compact=Footer.compact)
