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

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Break:
    """One deliberate break.

    Attributes:
        group: the module (or modules) it belongs to, as the summary counts them.
        path: the file, relative to the repository.
        old: an exact fragment of it, found exactly once (may span lines).
        new: what replaces it.
        tests: the test files that should catch it (relative paths).
        what: what a user would notice, in a few words.
    """

    group: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    what: str


FITTED = "tui_gateway/turns/fitted_turns.py"
_FT = ("tests/context/test_fitted_turns.py",)
_FT_CANCEL = ("tests/compression/test_cancel_compression_alone.py",)
DELEGATION = "tui_gateway/turns/delegation.py"
_DG = (
    "tests/gateway/test_delegation.py",
    "tests/gateway/test_delegation_order.py",
    "tests/gateway/test_delegation_interleavings.py",
)
STOP_KEYS = "desk/controllers/stop_keys.py"
_SK = (
    "tests/desk/test_stop_under_load.py",
    "tests/desk/test_app_stop.py",
    "tests/desk/test_keys.py",
)
_VT = ("tests/gateway/test_outside_text.py",)
_GD = ("tests/mcp/test_guard.py", "tests/tools/test_shell_tree.py")
_CL = (
    "tests/store/test_claims.py",
    "tests/store/postgres/test_hosts.py",
    "tests/store/test_leases.py",
)

BREAKS: tuple[Break, ...] = (
    # -- tui_gateway/turns/fitted_turns.py -------------------------------------------------------
    Break("fitted_turns", FITTED, "if turn.agent.stop_request is None:  # stopped:", "if True:  #",
          _FT, "a retry after a stop"),
    Break("fitted_turns", FITTED, "self.compress(session, turn, provider, manual=False, force=True)",
          "self.compress(session, turn, provider, manual=False, force=False)",
          _FT, "a retry without forced compression"),
    Break("fitted_turns", FITTED, "result.undelivered[:0] = first.undelivered",
          "result.undelivered[:0] = []", _FT, "steers the first attempt never took are lost"),
    Break("fitted_turns", FITTED, "turn.agent.carry_over()  #", "pass  #",
          _FT, "a stop that came late is lost (no carry_over)"),
    Break("fitted_turns", FITTED, "if not manual and self._saving_waits(session):",
          "if False:", _FT, "compressing while the session's writes wait"),
    Break("fitted_turns", FITTED, "and turn.agent.stop_request is None\n",
          "and turn.agent.stop_request is not None\n",
          _FT_CANCEL, "a cancelled compression forces one after all"),
    Break("fitted_turns", FITTED, "if did_not_fit(result) and not result.messages and not skipped:",
          "if did_not_fit(result) and not result.messages:",
          _FT_CANCEL, "a compression is forced after the person cancelled it"),
    Break("fitted_turns", FITTED, "            if skipped:\n", "            if False:\n",
          _FT_CANCEL, "the error no longer says the compression was cancelled"),
    Break("fitted_turns", FITTED, "result.error = not_sent_error(result)", "pass",
          _FT, "the error of a prompt that did not fit gives no figures"),
    Break("fitted_turns", FITTED, "self._compression_started(turn, compressor)", "pass",
          _FT, "a stop never reaches the compression"),
    Break("fitted_turns", FITTED, "        if not manual:\n", "        if manual:\n",
          _FT, "no 'compressing' state while it compresses"),
    # -- the delegation (tui_gateway/turns/delegation.py, child_outcome.py, turn_runner.py) ------
    Break("delegation", DELEGATION, "if result.stop is not None:\n            self.wait_children",
          "if result.stop is None:\n            self.wait_children",
          _DG, "a stopped child ends before its own children (a depth-2 tree)"),
    Break("delegation", "tui_gateway/turns/turn_runner.py",
          "if result.stop is not None:  # the whole tree", "if False:  # the whole tree",
          ("tests/gateway/test_delegation_order.py",),
          "children end after the parent's message.complete"),
    Break("delegation", DELEGATION, "registration = parent.scope.register(scope)",
          "registration = InterruptScope('elsewhere').register(scope)",
          _DG, "a parent's stop never reaches its children"),
    Break("delegation", DELEGATION, "if len(running) >= width:", "if len(running) > width:",
          _DG, "one child more than delegate_width"),
    Break("delegation", DELEGATION, "if depth > limit:", "if depth > limit + 1:",
          _DG, "children nest deeper than delegate_depth"),
    Break("delegation", DELEGATION, "return ChildDelivery.STEER if link.parent.steer(steer) else",
          "return ChildDelivery.NOTE if link.parent.steer(steer) else",
          _DG, "a background child's answer is said to be a note though it steered"),
    Break("delegation", DELEGATION, "if not link.background:", "if link.background:",
          _DG, "a foreground child's answer delivered as a steer"),
    Break("delegation", DELEGATION, "self._persistence.child_ended(session, child, booked)",
          "pass", _DG, "a child's outcome is never saved"),
    Break("delegation", DELEGATION, "self._publish(session, completed_event(child, delivery))",
          "pass", _DG, "no child.complete"),
    Break("delegation", DELEGATION, "await asyncio.wait({finished}, timeout=", "None and (",
          _DG, "a stopped parent does not wait for its foreground child"),
    Break("delegation", DELEGATION, "if self._config.delegate_depth > 0:", "if True:",
          _DG, "the delegate tool offered with delegation off"),
    Break("delegation", DELEGATION, "        if request.background:\n",
          "        if False:\n", _DG, "a background call waits like a foreground one"),
    Break("delegation", "tui_gateway/turns/child_outcome.py",
          "if stop is not None and stop.issuer is Issuer.USER:", "if stop is not None:",
          _DG, "a child's system stop reported as the person's"),
    Break("delegation", "tui_gateway/turns/child_outcome.py",
          "        return ToolResult(content=text)\n", "        return ToolResult.error(text)\n",
          _DG, "a child's answer reaches its parent as a tool error"),
    Break("delegation", DELEGATION,
          "self._roots[child_id] = self._roots.get(parent_turn_id, parent_turn_id)",
          "self._roots[child_id] = parent_turn_id",
          ("tests/gateway/test_delegation.py",),
          "a grandchild's file edits recorded outside the root turn's checkpoint"),
    # -- the stop keys (desk/controllers/stop_keys.py) -------------------------------------------
    Break("stop_keys", STOP_KEYS, "if self._quit.started:  # the quit stops", "if False:  #",
          _SK, "a key read on the input thread after quit began stops a turn"),
    Break("stop_keys", STOP_KEYS, "self._stopped_from_input_thread(key)  #", "pass  #",
          _SK, "a stop from the input thread is never announced to the UI"),
    Break("stop_keys", STOP_KEYS,
          "            self._turns.stop_sent(stopped)\n            self._stopped_from",
          "            self._stopped_from", _SK, "the UI never learns of a stop it did not send"),
    Break("stop_keys", STOP_KEYS, "if view is None or sent:", "if view is None:",
          _SK, "a key the input thread sent is sent again by the UI"),
    Break("stop_keys", STOP_KEYS, "and not sent\n", "and True\n",
          _SK, "Ctrl+C the input thread sent is sent again by the UI"),
    Break("stop_keys", STOP_KEYS, "keyed_at = time.monotonic() if key_time is None else key_time",
          "keyed_at = time.monotonic()", _SK, "a key's own time ignored: it stops a later prompt"),
    Break("stop_keys", STOP_KEYS, "if self._console.stop_from_input_thread(read_at):",
          "if False:", _SK + ("tests/desk/test_console_panel.py",),
          "a focused console does not get the stop key"),
    Break("stop_keys", STOP_KEYS, "early, self._early = self._early, []", "early, self._early = [], []",
          _SK + ("tests/desk/test_late_gateway.py",), "a key pressed while desk starts is lost"),
    Break("stop_keys", STOP_KEYS, "        if self._quit.started:\n            return True\n",
          "        if False:\n            return True\n", _SK,
          "a key on the UI thread after quit began stops a turn"),
    Break("stop_keys", STOP_KEYS, "if not self._input_presses.press(key, read_at):",
          "if not self._input_presses.press(key, read_at) and False:",
          _SK + ("tests/desk/test_stop_key_setting.py",),
          "a double stop key stops on its first press"),
    # -- agent/valid_text.py ---------------------------------------------------------------------
    Break("valid_text", "agent/valid_text.py", "if _SURROGATE.search(text) is None:\n        return",
          "if _SURROGATE.search(text) is not None:\n        return", _VT,
          "lone surrogates kept"),
    Break("valid_text", "agent/valid_text.py", '.decode("utf-16-le", "replace")',
          '.decode("utf-16-le", "surrogatepass")', _VT, "lone surrogates kept"),
    Break("valid_text", "agent/valid_text.py", "item[valid_text(key)] = item.pop(key)", "pass",
          _VT, "object keys keep their lone surrogates"),
    Break("valid_text", "agent/valid_text.py", "if _SURROGATE_OR_ESCAPE.search(text) is None:",
          "if _SURROGATE.search(text) is None:", _VT, "an escaped lone surrogate in JSON kept"),
    Break("valid_text", "agent/valid_text.py",
          "item[index] = valid_text(element)\n                elif isinstance(element, dict | list):"
          "\n                    stack.append(element)",
          "item[index] = valid_text(element)", _VT, "lists inside lists not walked"),
    Break("valid_text", "agent/valid_text.py", '.removeprefix("\\ufeff")', "", _VT,
          "JSON bytes with a byte-order mark refused"),
    # -- agent/guard.py --------------------------------------------------------------------------
    Break("guard", "agent/guard.py",
          "        _prctl(_PR_SET_CHILD_SUBREAPER, 1)\n        watched = _prctl(_PR_SET_PDEATHSIG,"
          " int(signal.SIGTERM))",
          "        watched = _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))",
          _GD, "the keeper is no subreaper: orphans escape"),
    Break("guard", "agent/guard.py", "os.setpgid(0, 0)", "pass", _GD,
          "the command shares the keeper's group"),
    Break("guard", "agent/guard.py", "_write(status_fd, _ending_line(end_tree(grace_s)))",
          "pass", _GD, "a command that kills its guard leaves its tree running"),
    Break("guard", "agent/guard.py", "    if _end_requested:\n        return\n",
          "    if False:\n        return\n", _GD, "a second signal cuts the ending short"),
    Break("guard", "agent/guard.py", "end_tree(grace_s)  # what the server left behind", "pass",
          _GD, "what an MCP server left behind keeps running"),
    Break("guard", "agent/guard.py", "uncounted=frozenset({guard, *_only_children(guard, wrapped)})",
          "uncounted=frozenset()", _GD, "the guard counted among the processes a stop ended"),
    Break("guard", "agent/guard.py", "signal.signal(signal.SIGHUP, _on_signal)", "pass",
          _GD, "a killed keeper leaves the command's tree running"),
    Break("guard", "agent/guard.py", "    _default_signals()\n    try:\n", "    try:\n",
          _GD, "the command starts with SIGPIPE ignored"),
    # -- claims and fencing (agent/store) --------------------------------------------------------
    Break("claims", "agent/store/postgres/claims.py",
          "if not force and mine is not None and fence > mine:", "if False:",
          _CL, "a late write of a host presumed dead is accepted"),
    Break("claims", "agent/store/postgres/claims.py",
          "owner not in gone and self._liveness.is_alive(owner):", "owner not in gone:",
          _CL, "a gone host's session is never taken over"),
    Break("claims", "agent/store/postgres/claims.py",
          "if owner is not None and not force and owner", "if owner is not None and owner",
          _CL + ("tests/store/postgres/test_faults.py",), "recovery of live owners' turns refused"),
    Break("claims", "agent/store/postgres/claims.py",
          "self._remember(session_id, int(taken[0]))", "pass",
          _CL, "a taken-over session's later takeover is not noticed"),
    Break("claims", "agent/store/sqlite/claims.py",
          "if owner is not None and self._liveness.is_alive(owner):", "if False:",
          _CL, "a session live in another desk is taken"),
    Break("claims", "agent/store/sqlite/claims.py", "            fence += 1\n", "",
          _CL, "a takeover draws no larger fencing number"),
    Break("claims", "agent/store/sql/leases.py", "self._e.hold(t, found[0])", "pass",
          _CL, "a lease renewed in a session another host took over"),
    Break("claims", "agent/store/sql/leases.py",
          "owner != self._owner and not self._liveness.is_alive(owner):",
          "owner != self._owner:", _CL, "a live holder's lease taken over"),
)


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
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
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
        b for b in BREAKS
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
        print(f"{outcome.verdict:8} {outcome.seconds:6.1f}s {b.group}: {b.what}"
              f"  [{b.path}: {b.old.strip()[:60]!r}]", flush=True)
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
