"""Textual's layouts freed when replaced, not left for the garbage collector.

Each layout pass (``Compositor._arrange_root``: every time a widget changes size, e.g. a reply
that grows by a line while it streams) builds a map of every widget to its geometry through a
nested function that calls itself. That function is a reference cycle (it refers to itself
through its closure), and its closure holds the map and the set of widgets it built, so every
map a later layout replaced stayed in memory until a collection found the cycle: streaming a
reply in a long session, those maps (their regions, sizes and geometries) were most of what
each collection walked, and a collection holds the interpreter lock throughout (see
:mod:`desk.lean_strips` for what that delayed).

:func:`lighten_layouts` hands the compositor copies of the map and the set and empties the
originals, so the cycle left behind holds only empty containers and the map is freed by
reference counting as soon as the next layout replaces it.
"""

from __future__ import annotations

from textual._compositor import Compositor, CompositorMap
from textual.geometry import Size
from textual.widget import Widget

_MARK = "_desk_lightened"
"""Set on :class:`Compositor` once patched, so that patching twice does nothing."""


def lighten_layouts() -> None:
    """Patch ``Compositor._arrange_root`` (process-wide, idempotent; call before the first
    frame) so that the maps it returns are not kept alive by its closure's cycle."""
    if getattr(Compositor, _MARK, False):
        return
    arrange = Compositor._arrange_root

    def arrange_root_without_cycle(
        self: Compositor, root: Widget, size: Size, visible_only: bool = True
    ) -> tuple[CompositorMap, set[Widget]]:
        built, widgets = arrange(self, root, size, visible_only)
        kept = dict(built), set(widgets)
        built.clear()  # what the closure's cycle still holds
        widgets.clear()
        return kept

    arrange_root_without_cycle.__doc__ = arrange.__doc__
    Compositor._arrange_root = arrange_root_without_cycle  # type: ignore[method-assign]
    setattr(Compositor, _MARK, True)
