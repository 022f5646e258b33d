"""Garbage-collector settings for a long-running full-screen app that streams fast.

The desk allocates a lot of short-lived objects per frame (Rich segments, Textual strips) and
keeps a large, long-lived object graph (widgets, styles, the transcript). With CPython's default
thresholds (700, 10, 10) a fast stream triggers frequent collections that walk that graph: in
``bench/stream_ingest.py`` at 20,000 tokens/s the collector took about 15 % of the UI thread
and its pauses doubled the tail (median 127 ms -> 58 ms with collection off). Reference counting
frees almost everything anyway; the collector is only needed for cycles, so it can run far less
often. After start-up the objects alive are frozen into the permanent generation
(``gc.freeze()``, the approach Instagram described for long-lived Python servers), so a full
collection no longer walks them.

Start-up itself (importing Textual and the desk, building the first screen, reading a resumed
session) allocates hundreds of thousands of long-lived objects and frees few: with the default
thresholds the collector walked them over and over, about 10 % of the CPU before the first frame
(``bench/startup.py``) and about 15 % of opening a 10,000-message session
(``bench/session_open.py``). So the thresholds are raised as soon as the desk starts
(:func:`relax_gc`), and the objects are frozen once the first screen is built (:func:`tune_gc`).
"""

from __future__ import annotations

import gc

THRESHOLDS = (50_000, 50, 100)
"""Allocations before a young collection, and young/middle collections before older ones."""


def relax_gc() -> None:
    """Make collections rarer now (process-wide), without freezing: call as the desk starts,
    before its modules are imported and its screen is built."""
    gc.set_threshold(*THRESHOLDS)


def tune_gc() -> None:
    """Freeze what is alive now and make collections rarer (process-wide; call once started)."""
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
