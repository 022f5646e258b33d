"""``desk run --json`` sent SIGTERM at a random moment of its first second (from its exec on):
every run writes exactly one ``turn.completed``, unless the signal came while the interpreter
was still starting, before desk's first line ran (README, "desk run and signals")."""

from __future__ import annotations

import json
import random
import signal
import sys
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from tests.desk.test_pty_stop import desk_command
from tests.support import poll_until, running_demo
from tests.wire.kit import Child

RUNS = 12
OWN = ("desk", "tui_gateway", "agent", "contract")
"""desk's packages: one imported means desk's code ran."""


def catches(pid: int, sig: signal.Signals) -> bool:
    """True when process ``pid`` has a handler for ``sig`` now (``SigCgt`` of /proc); False
    once it has ended."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return False


def imported(err: str) -> list[str]:
    """The modules ``PYTHONPROFILEIMPORTTIME`` says were imported, in order."""
    return [x.rsplit("|", 1)[1].strip() for x in err.splitlines() if x.startswith("import time:")]


def desk_ran(modules: list[str]) -> bool:
    """True when the import of one of desk's own modules (the ``desk`` package first) began:
    the timings list an import that a signal cut short too, so its code may not have run."""
    return any(m.split(".")[0] in OWN for m in modules)


def said(err: str) -> str:
    """stderr without the import timings."""
    return "\n".join(x for x in err.splitlines() if not x.startswith("import time:"))


def python_started(pid: int) -> bool:
    """True once the interpreter set its own SIGINT handler (before ``site`` and desk's imports)
    or ended."""
    return catches(pid, signal.SIGINT) or not Path(f"/proc/{pid}").exists()


def wait_for_the_moment(rng: random.Random, attempt: int, pid: int) -> str:
    """Wait for a random moment to send SIGTERM at; returns it, said. One run in three: in the
    first tenth of a second after the exec; one in three: within 60 ms of the interpreter's own
    start (``site``, desk's imports: the narrowest windows); the others anywhere in the first
    second (the gateway, the session, the turn streaming, the exit)."""
    if attempt % 3 == 1:
        assert poll_until(partial(python_started, pid), timeout=30.0, every_s=0.001)
        at = rng.uniform(0.0, 0.06)
        threading.Event().wait(at)  # a random moment, not a wait for work
        return f"{at:.3f} s after the interpreter started"
    at = rng.uniform(0.0, 0.1) if attempt % 3 == 0 else rng.uniform(0.0, 1.0)
    threading.Event().wait(at)
    return f"{at:.3f} s after the exec"


def signalled_run(
    base_url: str, db: Path, sig: signal.Signals, moment: Callable[[int], str]
) -> tuple[str, bool, int, str, str]:
    """``desk run --json`` against ``base_url`` saving to ``db``, sent ``sig`` at the moment
    ``moment(pid)`` waits for (and says).

    Returns:
        the moment said, whether desk caught SIGTERM by then (its first line ran), the exit
        code, stdout and stderr (with ``PYTHONPROFILEIMPORTTIME``: how far the start got).
    """
    connect = ["--base-url", base_url, "--model", "demo", "--db", str(db)]
    argv = [*desk_command(), "run", *connect, "--json", "tell me a story"]
    child = Child(argv, env={"PYTHONPROFILEIMPORTTIME": "1"})
    try:
        at = moment(child.proc.pid)
        caught = catches(child.proc.pid, signal.SIGTERM)
        child.proc.send_signal(sig)
        code = child.wait(60)
        out = child.out.wait_closed().decode()
        err = child.err.wait_closed().decode()
    finally:
        child.kill()
    return at, caught, code, out, err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_sigterm_at_any_moment_of_the_first_second_gives_one_turn_completed(
    tmp_path: Path,
) -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    died: list[str] = []
    with running_demo(60) as server:
        for attempt in range(RUNS):
            moment = partial(wait_for_the_moment, rng, attempt)
            db = tmp_path / f"sessions-{attempt}.db"
            at, handled, code, out, err = signalled_run(server.base_url, db, signal.SIGTERM, moment)
            where = f"seed {seed}, run {attempt}, SIGTERM {at}"
            if code == -signal.SIGTERM:  # killed by it: only before desk's first line ran
                modules = imported(err)
                assert not handled, where
                assert not desk_ran(modules), f"{where}: killed after importing {modules[-3:]}"
                assert out == "" and said(err) == "", where
                died.append(at)
                continue
            where += f": exit {code}, stderr {said(err)[-300:]!r}, imports {imported(err)[-3:]}"
            types = [json.loads(x)["type"] for x in out.splitlines()]
            assert types.count("turn.completed") == 1, where
            assert types[-1] == "turn.completed", where
            assert code in (0, 143), where
            assert "Traceback" not in err, where
    print(f"seed {seed}: {len(died)} of {RUNS} killed before desk's first line: {died}")


@pytest.mark.parametrize("entry", ["desk", "wire"])
def test_a_sigterm_after_turn_completed_does_not_kill_the_exit(tmp_path: Path, entry: str) -> None:
    """The end is written: a SIGTERM while the process exits (threads joined, the interpreter
    finalizing, when Python puts the default action back) changes nothing: exit 0."""
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    with running_demo(0) as server:
        for attempt in range(4):
            db = tmp_path / f"sessions-{attempt}.db"
            connect = ["--base-url", server.base_url, "--model", "demo", "--db", str(db)]
            flags = [*connect, "--json", "reply with exactly: done"]
            head = desk_command() if entry == "desk" else [sys.executable, "-m", "tui_gateway.wire"]
            child = Child([*head, "run", *flags])
            try:
                assert child.out.wait_for(lambda data: b'"turn.completed"' in data, 60)
                at = rng.uniform(0.0, 0.1)
                threading.Event().wait(at)  # a random moment of the exit, not a wait for work
                child.proc.send_signal(signal.SIGTERM)
                code = child.wait(60)
                out = child.out.wait_closed().decode()
            finally:
                child.kill()
            where = f"seed {seed}, run {attempt}, SIGTERM {at:.3f} s after turn.completed"
            assert code == 0, where
            assert [json.loads(x)["type"] for x in out.splitlines()].count("turn.completed") == 1
