"""Fitting the status bar's two sides into one line: lower-priority items give way first.

Each side is a row of items joined by `` · ``. An item may give way in steps (a shorter text,
then nothing), each step with a rank: while the two sides and the gap between them are wider
than the line, the step of the highest rank not taken yet is taken (the window's source and
the session's tokens go first, the turn's state and the context gauge last). What is still too
wide is then cut at its end with ``…``, the left side first, so the sides never overlap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len

SEPARATOR = " · "
"""Between two items of a side."""

GAP = 2
"""Columns kept empty between the two sides."""


@dataclass(frozen=True, slots=True)
class Part:
    """One item of a side.

    Attributes:
        text: its full text ("" for an item not shown now).
        steps: how it gives way, in order: ``(rank, text)``, a shorter text or "" (dropped);
            a higher rank gives way earlier. Empty: it never gives way.
    """

    text: str
    steps: tuple[tuple[int, str], ...] = ()


def joined(parts: Sequence[Part]) -> str:
    """A side's full text: its items' texts, the empty ones left out."""
    return SEPARATOR.join(p.text for p in parts if p.text)


def cut(text: str, width: int) -> str:
    """``text`` cut to ``width`` columns, ending with ``…`` when cut ("" for no room)."""
    if cell_len(text) <= width:
        return text
    if width <= 0:
        return ""
    out = ""
    for char in text:
        if cell_len(out + char) > width - 1:
            break
        out += char
    return out + "…"


def fit(left: Sequence[Part], right: Sequence[Part], width: int) -> tuple[str, str]:
    """The two sides' texts for a line of ``width`` columns.

    Args:
        left: the left side's items, in order.
        right: the right side's items, in order.
        width: the columns of the line (0 or less: not laid out yet; the full texts).

    Returns:
        ``(left, right)``: together with :data:`GAP` between them (when both show something)
        no wider than ``width`` (when it is positive).
    """
    shown = [[p.text for p in left], [p.text for p in right]]
    sides = (left, right)

    def text(side: int) -> str:
        return SEPARATOR.join(t for t in shown[side] if t)

    def wide() -> bool:
        gap = GAP if text(0) and text(1) else 0
        return cell_len(text(0)) + gap + cell_len(text(1)) > width

    if width <= 0:
        return text(0), text(1)
    steps = [
        (rank, side, index, order, step)
        for side, parts in enumerate(sides)
        for index, part in enumerate(parts)
        if part.text
        for order, (rank, step) in enumerate(part.steps)
    ]
    steps.sort(key=lambda s: (-s[0], s[1], s[2], s[3]))
    for _rank, side, index, _order, step in steps:
        if not wide():
            break
        shown[side][index] = step
    left_text, right_text = text(0), text(1)
    right_text = cut(right_text, width)
    room = width - cell_len(right_text) - (GAP if right_text else 0)
    return cut(left_text, max(room, 0)), right_text
