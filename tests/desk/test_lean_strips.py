"""The lines Textual draws are freed as soon as they are replaced, not by the garbage collector,
and make little for it to walk.

Nearly every strip the compositor drew was in a reference cycle with its own cache, so only a
collection (which holds the interpreter lock for tens of milliseconds, and delayed keys and
the "idle" frame) freed it; and each strip made seven caches the collector tracks. See
:mod:`desk.lean_strips`.
"""

from __future__ import annotations

import gc

import pytest
from rich.segment import Segment
from rich.style import Style
from textual.app import App, ComposeResult
from textual.strip import Strip
from textual.widgets import Static

from desk.lean_strips import lighten_strips

pytestmark = pytest.mark.anyio


def in_own_cycle(strip: Strip) -> bool:
    """Whether ``strip`` is reachable from itself through caches (dicts, lists, objects)."""
    seen: set[int] = set()
    todo = list(gc.get_referents(strip))
    for _ in range(4):  # the strip -> its cache -> the cache's dict -> a list or the strip
        found: list[object] = []
        for thing in todo:
            if thing is strip:
                return True
            if id(thing) not in seen and not isinstance(thing, (str, int, Segment)):
                seen.add(id(thing))
                found.extend(gc.get_referents(thing))
        todo = found
    return False


class Lines(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("", id="text")


async def test_drawing_changed_text_leaves_no_strip_for_the_collector(
    saved_garbage: list[object],
) -> None:
    lighten_strips()
    app = Lines()
    async with app.run_test(size=(60, 20)) as pilot:
        text = app.query_one("#text", Static)
        for frame in range(30):  # a reply growing frame by frame
            text.update("\n".join(f"line {n} of frame {frame}" for n in range(frame % 15)))
            await pilot.pause()
        gc.collect()
        cycles = [s for s in saved_garbage if isinstance(s, Strip) and in_own_cycle(s)]
    assert cycles == []  # (another test's widgets, freed now, may hold strips: not counted)


def test_a_strip_divided_at_its_end_or_cropped_whole_is_itself() -> None:
    lighten_strips()
    strip = Strip([Segment("hello "), Segment("world")])
    assert strip.divide([11]) == [strip]
    assert strip.divide([11, 20]) == [strip]
    assert strip.crop_extend(0, 11, None) is strip
    assert [part.text for part in strip.divide([5, 11])] == ["hello", " world"]
    assert strip.crop_extend(0, 13, None).text == "hello world  "
    assert strip.crop_extend(6, 11, None).text == "world"


def test_a_strip_gives_the_collector_little_to_track_until_its_caches_are_used() -> None:
    lighten_strips()
    segments = [Segment("hello "), Segment("world")]
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        before = len(gc.get_objects())
        strips = [Strip(segments, 11) for _ in range(1000)]
        tracked = len(gc.get_objects()) - before
    finally:
        if was_enabled:
            gc.enable()
    assert tracked < 2.5 * len(strips)  # the strip and its list of segments
    cropped = strips[0].crop(6)
    assert cropped.text == "world"
    assert strips[0].crop(6) is cropped  # the cache, made when first used, keeps it
    styled = strips[0].apply_style(Style(bold=True))
    assert [segment.style for segment in styled] == [Style(bold=True)] * 2
