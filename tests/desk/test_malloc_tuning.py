"""desk's process keeps glibc to two malloc arenas however many threads it runs.

Each thread that allocates would otherwise get an arena of its own (up to eight a core), and
the free memory kept in each of them grew the soak's resident memory (see
:mod:`desk.malloc_tuning`). The checks run in a fresh interpreter: arenas made before the cap
stay, and the test runner's own threads have made some.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from desk.malloc_tuning import ARENA_MAX, arena_count

ROOT = Path(__file__).resolve().parents[2]

STARTS = {
    # the app: a bad flag ends it after the early frame, with exit code 2
    "app": "code = main(['--no-such-flag'])",
    # a subcommand: --help ends it before it runs anything
    "subcommand": "code = 0\ntry:\n    main(['run', '--help'])\nexcept SystemExit:\n    pass",
}

CHILD = """
import os, sys, threading
from desk.__main__ import main
from desk.malloc_tuning import arena_count
{start}
sys.stdout.flush()
go = threading.Barrier(17)
def work():
    held = [bytearray(4096) for _ in range(50)]  # malloc, not Python's small-object allocator
    go.wait()
threads = [threading.Thread(target=work) for _ in range(16)]
for t in threads:
    t.start()
go.wait()
for t in threads:
    t.join()
print("arenas", arena_count(), file=sys.stderr)
"""


def arenas_after(start: str, tmp_path: Path, **env: str) -> int:
    """Start desk's way in a fresh interpreter, then run 16 threads that each allocate while
    all are alive; the arenas glibc made."""
    environ = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    environ |= {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"), **env}
    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(start=STARTS[start] if start else "")],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    line = [x for x in done.stderr.splitlines() if x.startswith("arenas ")][-1]
    return int(line.split()[1])


pytestmark = pytest.mark.skipif(arena_count() is None, reason="glibc's malloc only")


@pytest.mark.parametrize("start", ["app", "subcommand"])
def test_desk_starting_caps_the_arenas_its_threads_get(start: str, tmp_path: Path) -> None:
    assert arenas_after(start, tmp_path) <= ARENA_MAX


def test_without_desk_start_the_threads_get_arenas_of_their_own(tmp_path: Path) -> None:
    # what the cap prevents (glibc allows eight arenas a core: more than two on any machine)
    assert arenas_after("", tmp_path) > ARENA_MAX


def test_malloc_arena_max_set_by_the_person_wins(tmp_path: Path) -> None:
    assert arenas_after("app", tmp_path, MALLOC_ARENA_MAX="4") == 4
