"""Textual's strips made lighter for the collector: no cycle with their own caches, and caches
made when first used.

Textual draws every line of the screen as a :class:`~textual.strip.Strip`, and each strip keeps
small caches of what was derived from it. That cost the garbage collector twice:

- Two of those derivations are often the strip itself: ``divide`` with the one cut at the
  strip's end (a line that one widget fills) and ``crop_extend`` over the whole strip (a line
  that fits its region exactly). Cached, that made a cycle (the strip -> its cache -> the
  strip) for nearly every line the compositor drew, so those strips were never freed by
  reference counting, only by a collection: streaming a reply, about half of what each
  collection found was such strips.
- Each strip made its seven caches (seven objects the collector tracks) when it was made,
  though most strips never use more than one or two: about a third of the young objects a
  collection walked were these caches.

A collection holds the interpreter lock throughout (20-60 ms of CPU on a 2-core machine, every
few seconds of a fast stream), so a stop key read, or the "idle" frame after a turn ended,
waited that long whenever it fell in one (``bench/idle_after_stop.py``'s ``gc.start`` and
``gc.stop`` stamps).

:func:`lighten_strips` makes those two methods return the strip itself without caching it (the
result Textual gives for them), and makes each cache when the strip first uses it. Should a
Textual release make strips differently (another constructor, a cache that is not a
:class:`~textual.cache.FIFOCache`, a field with a mutable default), the caches are left as they
are and only the cycles are broken.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence

from rich.segment import Segment
from rich.style import Style
from textual.cache import FIFOCache
from textual.strip import Strip

_MARK = "_desk_lightened"
"""Set on :class:`Strip` once patched, so that patching twice does nothing."""


def lighten_strips() -> None:
    """Patch :class:`~textual.strip.Strip` (process-wide, idempotent; call before the first
    frame): ``divide`` and ``crop_extend`` return the strip itself uncached where that is their
    result, and a strip's caches are made on first use."""
    if getattr(Strip, _MARK, False):
        return
    _break_self_cycles()
    _make_caches_on_first_use()
    setattr(Strip, _MARK, True)


def _break_self_cycles() -> None:
    divide = Strip.divide
    crop_extend = Strip.crop_extend

    def divide_without_cycle(self: Strip, cuts: Iterable[int]) -> Sequence[Strip]:
        cuts = list(cuts)
        length = self.cell_length
        if [cut for cut in cuts if cut <= length] == [length]:
            return [self]  # Textual's result, without the cache that made it a cycle
        return divide(self, cuts)

    def crop_extend_without_cycle(self: Strip, start: int, end: int, style: Style | None) -> Strip:
        if start == 0 and end == self.cell_length:
            return self  # extend and crop both give the strip itself
        return crop_extend(self, start, end, style)

    divide_without_cycle.__doc__ = divide.__doc__
    crop_extend_without_cycle.__doc__ = crop_extend.__doc__
    Strip.divide = divide_without_cycle  # type: ignore[method-assign]
    Strip.crop_extend = crop_extend_without_cycle  # type: ignore[method-assign]


def _make_caches_on_first_use() -> None:
    made = _fields_as_made()
    if made is None:
        return
    cache_sizes, others = made

    def init_without_caches(
        self: Strip, segments: Iterable[Segment], cell_length: int | None = None
    ) -> None:
        self._segments = list(segments)
        self._cell_length = cell_length
        for name in others:
            setattr(self, name, None)

    def make_cache(self: Strip, name: str) -> FIFOCache[object, object]:
        size = cache_sizes.get(name)
        if size is None:
            raise AttributeError(name)
        cache: FIFOCache[object, object] = FIFOCache(size)
        setattr(self, name, cache)
        return cache

    init_without_caches.__doc__ = Strip.__init__.__doc__
    Strip.__init__ = init_without_caches  # type: ignore[method-assign]
    Strip.__getattr__ = make_cache  # type: ignore[attr-defined]


def _fields_as_made() -> tuple[dict[str, int], tuple[str, ...]] | None:
    """What a strip's constructor sets besides its segments and length: the caches (name ->
    size) and the fields that start as None; None when it sets anything else."""
    parameters = list(inspect.signature(Strip.__init__).parameters)
    if parameters != ["self", "segments", "cell_length"]:
        return None
    slots = getattr(Strip, "__slots__", None)
    if not isinstance(slots, (list, tuple)):
        return None
    probe = Strip([Segment("x")], 1)
    cache_sizes: dict[str, int] = {}
    others: list[str] = []
    for name in slots:
        if name in ("_segments", "_cell_length"):
            continue
        value = getattr(probe, name, None)
        if isinstance(value, FIFOCache) and isinstance(value._maxsize, int):
            cache_sizes[name] = value._maxsize
        elif value is None:
            others.append(name)
        else:
            return None
    return cache_sizes, tuple(others)
