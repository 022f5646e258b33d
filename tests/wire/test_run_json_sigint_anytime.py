"""``desk run --json`` sent Ctrl+C (SIGINT) at a random moment of its start: every run writes
exactly one ``turn.completed`` and exits 130, unless the signal came while the interpreter was
still starting, before desk's first line ran (README, "desk run and signals"): then Python's own
``KeyboardInterrupt`` ends it, with nothing on stdout.

Half the runs are sent it within 20 ms of desk's first line (seen by its SIGTERM handler in
``/proc``, set in the same line as its SIGINT one): the moments where Python's own handler
used to raise in the entry module's imports, before anything could catch it (a traceback, no
``turn.completed``)."""

from __future__ import annotations

import json
import random
import signal
import sys
import threading
from functools import partial
from pathlib import Path

import pytest

from tests.support import poll_until, running_demo
from tests.wire.test_run_json_sigterm_anytime import (
    catches,
    desk_ran,
    imported,
    python_started,
    said,
    signalled_run,
)

RUNS = 16


def desk_started(pid: int) -> bool:
    """True once desk's first line took its signals (or the process ended)."""
    return catches(pid, signal.SIGTERM) or not Path(f"/proc/{pid}").exists()


def wait_for_the_moment(rng: random.Random, attempt: int, pid: int) -> str:
    """Wait for a random moment to send SIGINT at; returns it, said. Even runs: within 20 ms of
    desk's first line; odd ones: anywhere in the first 0.6 s after the interpreter started."""
    if attempt % 2 == 0:
        assert poll_until(partial(desk_started, pid), timeout=30.0, every_s=0.0003)
        at = rng.uniform(0.0, 0.02)
        threading.Event().wait(at)  # a random moment, not a wait for work
        return f"{at:.3f} s after desk's first line"
    assert poll_until(partial(python_started, pid), timeout=30.0, every_s=0.0005)
    at = rng.uniform(0.0, 0.6)
    threading.Event().wait(at)
    return f"{at:.3f} s after the interpreter started"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_ctrl_c_at_any_moment_of_the_start_gives_one_turn_completed_and_130(
    tmp_path: Path,
) -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    before_desk: list[str] = []
    with running_demo(60) as server:
        for attempt in range(RUNS):
            moment = partial(wait_for_the_moment, rng, attempt)
            db = tmp_path / f"sessions-{attempt}.db"
            at, taken, code, out, err = signalled_run(server.base_url, db, signal.SIGINT, moment)
            where = f"seed {seed}, run {attempt}, SIGINT {at}"
            modules = imported(err)
            # Before desk's first line took the signals (seen in /proc just before the send),
            # Python's own Ctrl+C may end it: while the package's code loads, say, which the
            # import timings list as imported (they list an import that failed too)
            if not taken and out == "" and code in (1, -signal.SIGINT):
                assert not desk_ran(modules) or "KeyboardInterrupt" in err, where
                before_desk.append(at)
                continue
            where += f": exit {code}, stderr {said(err)[-1500:]!r}, imports {modules[-8:]}"
            types = [json.loads(x)["type"] for x in out.splitlines()]
            assert types.count("turn.completed") == 1, where
            assert types[-1] == "turn.completed", where
            last = json.loads(out.splitlines()[-1])["payload"]
            assert code == 130 and last["exit_reason"] == "interrupted_by_user", where
            assert "Traceback" not in err, where
    print(f"seed {seed}: {len(before_desk)} of {RUNS} stopped before desk's first line")
