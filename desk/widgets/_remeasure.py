"""A widget whose every layout request is measured, even one made while another waits.

Textual (8.2.8) keeps a widget's box model cached under a key that includes a counter,
``Widget._layout_updates``, and ``Widget.refresh(layout=True)`` increments it only when no
request is pending (``_layout_required`` is False). The pending flag is cleared, and the
request handed to the screen, only when the widget's own message queue next goes idle. A
layout pass started meanwhile by another widget (a sibling whose request went first, on a busy
machine) measures the widget and caches its box model under the incremented counter; a second
request made after that pass — for instance from ``render_line`` during the pass's paint, when
rendering a piece shows its real height — leaves the counter as it is. The screen then lays
out again as asked, but finds the cached box model and keeps the height measured before: the
widget's last rows stay cut until something else (a resize) changes the key.

:class:`Remeasured` increments the counter for such a second request too, so the layout pass
that follows (the one already asked for: no extra frame) calls ``get_content_height`` again.
"""

from __future__ import annotations

from typing import Self

from textual.geometry import Region
from textual.widget import Widget


class Remeasured(Widget):
    """A :class:`~textual.widget.Widget` measured again by the layout pass after every
    ``refresh(layout=True)``, however many requests were merged before the screen saw them
    (see the module's docstring)."""

    def refresh(
        self,
        *regions: Region,
        repaint: bool = True,
        layout: bool = False,
        recompose: bool = False,
    ) -> Self:
        """Textual's refresh; a layout request made while one is pending also invalidates the
        box model measured since (the pending one's layout pass uses the new height)."""
        if layout and self._layout_required:
            self._layout_updates += 1
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)


__all__ = ["Remeasured"]
