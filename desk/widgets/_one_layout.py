"""A widget whose size change needs no second layout of the screen.

Textual declares ``Widget.virtual_size`` as a reactive with ``layout=True``: when a layout pass
gives a widget a new size, setting it asks for another layout of the whole screen, and every
widget that grew is painted again in a second frame with nothing changed. A streamed reply
grows at every delta, so each delta cost two full frames (measured: 30 ms of the UI thread's
CPU per delta at 2,000 tokens/s on a 2-core machine, 21 ms with one). For a widget that does not
scroll, and for a scrolling one whose scrollbars the layout pass itself updates (Textual's
``_scroll_update``), the value is all that is needed: :func:`one_layout_virtual_size` declares
it without the refresh.
"""

from __future__ import annotations

from textual.geometry import Size
from textual.reactive import Reactive


def one_layout_virtual_size() -> Reactive[Size]:
    """A ``virtual_size`` reactive for a widget class: set by the layout pass, asking for no
    layout or repaint of its own. Use as ``virtual_size = one_layout_virtual_size()`` in the
    class body."""
    return Reactive(Size(0, 0), layout=False, repaint=False)


__all__ = ["one_layout_virtual_size"]
