"""The test modules' rewritten asserts and the project's bytecode, cached once by the run's main
process before its xdist workers start.

pytest rewrites the asserts of every test module (and conftest) it imports and caches the
result beside it (``__pycache__/*-pytest-*.pyc``). On a fresh clone (CI) there is no cache yet,
so each worker rewrote every module itself, all at the same moment: about 4.5 s of CPU per
worker on a 2-core machine, four times over. Done here once, the workers read the cache. The
project's own modules are compiled here too (a second each, in every worker, before).

It uses pytest's own rewriting (``_pytest.assertion.rewrite``, pytest 8); anything unexpected
there only leaves the work to the workers, as before.
"""

from __future__ import annotations

import compileall
import contextlib
import sys
from pathlib import Path

import pytest


def rewrite_test_modules(config: pytest.Config, root: Path) -> int:
    """Rewrite and cache every ``test_*.py`` and ``conftest.py`` under ``root`` whose cache is
    missing or stale, as pytest's import hook would.

    Args:
        config: the run's configuration (the rewrite depends on its settings).
        root: the tests' folder.

    Returns:
        how many modules were rewritten now (0 when asserts are not rewritten in this run, or
        bytecode is not written).
    """
    if sys.dont_write_bytecode or config.getoption("assertmode", "rewrite") != "rewrite":
        return 0
    try:
        from _pytest.assertion.rewrite import (
            PYC_TAIL,
            _read_pyc,
            _rewrite_test,
            _write_pyc,
            assertstate_key,
            get_cache_dir,
        )

        state = config.stash[assertstate_key]
    except (ImportError, KeyError):
        return 0
    written = 0
    for source in sorted([*root.rglob("test_*.py"), *root.rglob("conftest.py")]):
        cache = get_cache_dir(source)
        pyc = cache / (source.name[:-3] + PYC_TAIL)
        if _read_pyc(source, pyc) is not None:
            continue
        with contextlib.suppress(OSError, SyntaxError):
            cache.mkdir(exist_ok=True)
            stat, code = _rewrite_test(source, config)
            written += bool(_write_pyc(state, code, stat, pyc))
    return written


def compile_project(root: Path, packages: tuple[str, ...]) -> None:
    """Write the bytecode of ``packages`` (folders of ``root``) where it is missing or stale,
    unless bytecode is not written in this run."""
    if sys.dont_write_bytecode:
        return
    for package in packages:
        compileall.compile_dir(root / package, quiet=2)
