"""Does the suite catch the breaks? One-line breaks of the newer modules, each run against the
test files that should catch it.

Each :class:`Break` names a file, an exact fragment of it (found exactly once), what replaces
it (a removed call, an inverted condition, a dropped argument: code that still runs) and the
test files that should fail with it. For each, the file is edited in the working tree, those
files alone run (``pytest -n 0 -x -q``, one at a time, under a bound), and the file is put back
(always, Ctrl+C included; ``git diff --quiet`` on it must hold after).

A break is *caught* when a test failed; a run that passed is a *survivor*; a run cut by the
bound counts as caught only when a test had failed by then (otherwise it is a hang, reported
apart and not caught); a run that could not start (a collection error) is an *error*.

Run: ``python bench/breaks.py [--group NAME] [--match TEXT] [--timeout 240] [--check]``
(``--check`` only checks that every fragment is found once). Prints one line per break, then
caught/total per group, the survivors and the load average; exits 1 when a file could not be
put back.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from break_list import BREAKS, DELEGATION, DELEGATION_TESTS, Break
from break_list_agent import AGENT_BREAKS, GUARD_TESTS

ROOT = Path(__file__).resolve().parent.parent


HARMLESS: tuple[tuple[Break, str], ...] = (
    (
        Break(
            "delegation",
            DELEGATION,
            "await asyncio.wait({finished}, timeout=",
            "None and (",
            DELEGATION_TESTS,
            "a stopped parent does not wait for its foreground child",
        ),
        "equivalent: the stopped parent's own end waits (bounded, the same bound) for every "
        "child it started (Delegation.wait_children, from the turn runner and from _run), "
        "the foreground one included, before its outcome is booked or published",
    ),
    (
        Break(
            "guard",
            "agent/guard.py",
            "signal.signal(signal.SIGHUP, _on_signal)",
            "pass",
            GUARD_TESTS,
            "a killed keeper leaves the command's tree running",
        ),
        "equivalent: the guard is forked after the keeper set _on_signal for every ending "
        "signal (SIGHUP included), and a fork keeps the handlers",
    ),
)
"""Breaks that change nothing a user could notice, and why; not run."""


def _write(path: Path, text: str) -> None:
    """Write ``text`` and move the file's time past any earlier version's (whole seconds), so
    no cached bytecode of another version is taken for this one."""
    before = path.stat().st_mtime
    path.write_text(text, encoding="utf-8")
    stamp = max(time.time(), before + 1.0)
    os.utime(path, (stamp, stamp))


@dataclass(frozen=True)
class Outcome:
    """What one break's run gave: ``caught``, ``survived``, ``hung`` or ``error``; seconds."""

    verdict: str
    seconds: float
    detail: str


def _failed(output: str) -> bool:
    """True when pytest's output shows a failed or erroring test."""
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")) or (
            line and set(line.split(" [")[0]) <= set(".FEsxX") and ("F" in line or "E" in line)
        ):
            return True
    return False


def _run_tests(tests: tuple[str, ...], timeout_s: float) -> Outcome:
    """Run the test files in a process group of their own; see the module docstring."""
    cmd = [sys.executable, "-m", "pytest", "-n", "0", "-x", "-q", "-p", "no:cacheprovider", *tests]
    started = time.monotonic()
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            rc: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        out.seek(0)
        output = out.read()
    seconds = time.monotonic() - started
    tail = " | ".join(line for line in output.splitlines()[-3:] if line.strip())[:200]
    if rc is None:
        return Outcome("caught" if _failed(output) else "hung", seconds, tail)
    if rc == 0:
        return Outcome("survived", seconds, tail)
    if rc == 1:
        return Outcome("caught", seconds, tail)
    return Outcome("error", seconds, f"exit {rc}: {tail}")


def _clean(path: str) -> bool:
    return subprocess.run(["git", "diff", "--quiet", "--", path], cwd=ROOT).returncode == 0


def run_break(brk: Break, timeout_s: float) -> Outcome:
    """Apply ``brk``, run its tests, put the file back (always).

    Raises:
        RuntimeError: the fragment is not found exactly once, or the file has changes before
            the break or after it was put back.
    """
    path = ROOT / brk.path
    if not _clean(brk.path):
        raise RuntimeError(f"{brk.path} has changes already: commit or stash them")
    original = path.read_text(encoding="utf-8")
    if original.count(brk.old) != 1:
        raise RuntimeError(f"{brk.path}: {brk.old!r} found {original.count(brk.old)} times")
    try:
        _write(path, original.replace(brk.old, brk.new))
        return _run_tests(brk.tests, timeout_s)
    finally:
        _write(path, original)
        if not _clean(brk.path):
            raise RuntimeError(f"{brk.path} was not put back")


def main() -> int:
    """Run the breaks chosen on the command line; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--group", action="append", help="only these groups")
    parser.add_argument("--match", help="only breaks whose 'what' or fragment has this text")
    parser.add_argument("--timeout", type=float, default=240.0, help="bound of one run (s)")
    parser.add_argument("--check", action="store_true", help="only check the fragments")
    args = parser.parse_args()
    chosen = [
        b
        for b in BREAKS + AGENT_BREAKS
        if (not args.group or b.group in args.group)
        and (not args.match or args.match in b.what or args.match in b.old)
    ]
    if args.check:
        bad = 0
        for b in chosen:
            n = (ROOT / b.path).read_text(encoding="utf-8").count(b.old)
            missing = [t for t in b.tests if not (ROOT / t).exists()]
            if n != 1 or missing:
                bad += 1
                print(f"BAD {b.path}: {b.old!r} x{n}; missing tests {missing}")
        print(f"{len(chosen) - bad}/{len(chosen)} fragments found once")
        return 1 if bad else 0
    load_before = os.getloadavg()
    totals: dict[str, list[int]] = {}
    left: list[tuple[Break, Outcome]] = []
    for b in chosen:
        outcome = run_break(b, args.timeout)
        count = totals.setdefault(b.group, [0, 0])
        count[1] += 1
        if outcome.verdict == "caught":
            count[0] += 1
        else:
            left.append((b, outcome))
        print(
            f"{outcome.verdict:8} {outcome.seconds:6.1f}s {b.group}: {b.what}"
            f"  [{b.path}: {b.old.strip()[:60]!r}]",
            flush=True,
        )
    print("\ncaught/total per group:")
    for group, (caught, total) in totals.items():
        print(f"  {group:14} {caught}/{total}")
    caught = sum(c for c, _ in totals.values())
    total = sum(t for _, t in totals.values())
    print(f"  {'all':14} {caught}/{total} ({100 * caught / max(total, 1):.0f} %)")
    if left:
        print("\nnot caught:")
        for b, o in left:
            print(f"  {o.verdict}: {b.group}: {b.what} [{b.path}] {o.detail}")
    load_after = os.getloadavg()
    print(f"\nload average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
