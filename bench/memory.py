"""What a process's memory is made of, as a soak needs it to tell a leak from warm-up.

``MemorySample.now()`` reads, for this process: the resident set (``VmRSS``), its anonymous and
file-backed parts (``/proc/self/smaps_rollup``, as ``smem`` splits them), the number of threads,
the blocks Python's own allocator holds (``sys.getallocatedblocks()``: Python objects) and
glibc's view of its heap (``mallinfo2``: bytes handed out, bytes free but kept, arenas' size;
``malloc_info``: how many arenas).
Resident memory that grows while Python's blocks and glibc's bytes in use stay flat is
fragmentation or free memory glibc keeps, not a leak of objects.

``trim()`` asks glibc to give free heap memory back to the system (``malloc_trim(0)``);
``arena_max()`` is the ``MALLOC_ARENA_MAX`` this process started with (None: glibc's default,
eight arenas a core).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import sys
import threading
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from desk.malloc_tuning import arena_count, cap_arenas


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _libc() -> Any:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.mallinfo2.restype = _MallInfo2
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.malloc_trim.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None  # not glibc, or older than 2.33
    return libc


_LIBC = _libc()


def _libsqlite() -> Any:
    try:
        import _sqlite3  # loads the library Python's sqlite3 uses, so its counters are ours

        lib = ctypes.CDLL(_sqlite3.__file__)
        lib.sqlite3_status64.argtypes = [
            ctypes.c_int,
            ctypes.POINTER(ctypes.c_int64),
            ctypes.POINTER(ctypes.c_int64),
            ctypes.c_int,
        ]
    except (ImportError, OSError, AttributeError):
        return None
    return lib


_SQLITE = _libsqlite()
SQLITE_STATUS_MEMORY_USED = 0


def sqlite_kb() -> int:
    """What SQLite's allocator holds in this process (page caches, schemas, statements), KiB."""
    if _SQLITE is None:
        return 0
    cur, high = ctypes.c_int64(0), ctypes.c_int64(0)
    _SQLITE.sqlite3_status64(SQLITE_STATUS_MEMORY_USED, ctypes.byref(cur), ctypes.byref(high), 0)
    return cur.value // 1024


def _kb_fields(path: str, names: tuple[str, ...]) -> dict[str, int]:
    found: dict[str, int] = {}
    try:
        text = Path(path).read_text()
    except OSError:
        return found
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in names:
            found[key] = int(rest.split()[0])
    return found


@dataclass(frozen=True, slots=True)
class MemorySample:
    """One reading of this process's memory; sizes in KiB, ``minute`` since the soak began."""

    minute: float
    rss_kb: int
    anon_kb: int
    file_kb: int
    threads: int
    python_blocks: int
    malloc_in_use_kb: int
    malloc_free_kb: int
    malloc_mmapped_kb: int
    arenas: int
    sqlite_kb: int

    @classmethod
    def now(cls, minute: float) -> MemorySample:
        """Read this process's memory now (zeros where ``/proc`` or glibc do not say)."""
        status = _kb_fields("/proc/self/status", ("VmRSS",))
        rollup = _kb_fields("/proc/self/smaps_rollup", ("Anonymous", "Rss"))
        rss = status.get("VmRSS", 0)
        anon = rollup.get("Anonymous", 0)
        in_use = free = mmapped = 0
        if _LIBC is not None:
            info = _LIBC.mallinfo2()
            in_use, free, mmapped = info.uordblks, info.fordblks, info.hblkhd
        return cls(
            minute=round(minute, 2),
            rss_kb=rss,
            anon_kb=anon,
            file_kb=max(0, rollup.get("Rss", rss) - anon),
            threads=threading.active_count(),
            python_blocks=sys.getallocatedblocks(),
            malloc_in_use_kb=in_use // 1024,
            malloc_free_kb=free // 1024,
            malloc_mmapped_kb=mmapped // 1024,
            arenas=arena_count() or 0,
            sqlite_kb=sqlite_kb(),
        )

    def as_dict(self) -> dict[str, Any]:
        """The sample as JSON-ready fields."""
        return asdict(self)


def trim() -> bool:
    """Give glibc's free heap memory back to the system; True when some was released."""
    return bool(_LIBC is not None and _LIBC.malloc_trim(0))


def set_arena_max(n: int) -> bool:
    """At most ``n`` malloc arenas from now on, as desk sets them at its start
    (:func:`desk.malloc_tuning.cap_arenas`; ``MALLOC_ARENA_MAX`` in the environment wins); call
    it before threads start. True when glibc took it."""
    return cap_arenas(os.environ, n)


def arena_max() -> int | None:
    """``MALLOC_ARENA_MAX`` as this process got it (None: not set, glibc's default)."""
    value = os.environ.get("MALLOC_ARENA_MAX")
    return int(value) if value and value.isdigit() else None


@dataclass(frozen=True, slots=True)
class RssGrowth:
    """How a run's resident memory grew, in KiB and percent, from its start and after its
    warm-up (the first fifth of the run: pools, caches and arenas filling; on a 60-minute run
    the first 12 minutes). Both are reported; the bound applies to ``after_warmup_pct``.

    ``start_kb`` is the first sample, ``warmup_peak_kb`` the first fifth's peak,
    ``last_fifth_peak_kb`` the last fifth's, ``end_kb`` the last sample, ``peak_kb`` the whole
    run's; ``from_start_pct`` is ``last_fifth_peak_kb`` over ``start_kb``, ``after_warmup_pct``
    over ``warmup_peak_kb``. ``tenths_peak_kb`` is the peak of each tenth of the run (whether
    it levels off).
    """

    start_kb: int
    warmup_peak_kb: int
    last_fifth_peak_kb: int
    end_kb: int
    peak_kb: int
    from_start_pct: float
    after_warmup_pct: float
    tenths_peak_kb: list[int]

    def as_dict(self) -> dict[str, Any]:
        """The figures as JSON-ready fields."""
        return asdict(self)


def _pct(now: int, then: int) -> float:
    return round(100.0 * (now - then) / then, 1) if then else 0.0


def rss_growth(samples: list[MemorySample]) -> RssGrowth:
    """The RSS growth of a run from its samples (in time order); zeros without samples."""
    if not samples:
        return RssGrowth(0, 0, 0, 0, 0, 0.0, 0.0, [])
    rss = [m.rss_kb for m in samples]
    fifth = max(1, len(rss) // 5)
    warm, last = max(rss[:fifth]), max(rss[-fifth:])
    n = len(rss)
    tenths = [max(rss[i * n // 10 : max(i * n // 10 + 1, (i + 1) * n // 10)]) for i in range(10)]
    return RssGrowth(
        start_kb=rss[0],
        warmup_peak_kb=warm,
        last_fifth_peak_kb=last,
        end_kb=rss[-1],
        peak_kb=max(rss),
        from_start_pct=_pct(last, rss[0]),
        after_warmup_pct=_pct(last, warm),
        tenths_peak_kb=tenths if n >= 10 else [],
    )


def by_minute(samples: list[MemorySample]) -> list[dict[str, Any]]:
    """The first sample of each whole minute (and the last one), as JSON-ready fields."""
    picked: dict[int, MemorySample] = {}
    for m in samples:
        picked.setdefault(int(m.minute), m)
    chosen = [picked[k] for k in sorted(picked)]
    if samples and samples[-1] is not chosen[-1]:
        chosen.append(samples[-1])
    return [m.as_dict() for m in chosen]


def census() -> Counter[str]:
    """Live objects the collector tracks, by type (``module.qualname``), after a full
    collection (strings and numbers are not counted: see ``python_blocks``)."""
    gc.collect()
    return Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects())
