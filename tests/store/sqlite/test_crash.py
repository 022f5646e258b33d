"""A writer killed with SIGKILL at random points loses nothing it reported and leaves no half row.

Each round starts :mod:`tests.store.sqlite.crash_writer` in a child process, reads a random
number of its "committed" lines, kills it with SIGKILL mid-flight, then reopens the file (which
runs crash recovery) and checks the whole database against everything reported so far.
"""

from __future__ import annotations

import os
import queue
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from agent.store import CRASH_EXIT_REASON, SqliteStore
from tests.store.sqlite.crash_writer import SESSIONS, draft_text, payload

ROOT = Path(__file__).resolve().parents[3]
ROUNDS = 16
SEED = 20240611


@dataclass
class Reports:
    """What the children said they committed."""

    messages: dict[tuple[str, int], str] = field(default_factory=dict)
    started: dict[str, str] = field(default_factory=dict)
    drafts: dict[str, int] = field(default_factory=dict)
    closed: set[str] = field(default_factory=set)

    def add(self, line: str) -> None:
        kind, *rest = line.split()
        if kind == "M":
            self.messages[(rest[0], int(rest[1]))] = rest[2]
        elif kind == "T":
            self.started[rest[0]] = rest[1]
        elif kind == "D":
            self.drafts[rest[0]] = int(rest[1])
        elif kind == "C":
            self.closed.add(rest[0])


def _pump(stream: object, lines: queue.Queue[str | None]) -> None:
    for line in iter(stream.readline, ""):  # type: ignore[attr-defined]
        lines.put(line)
    lines.put(None)


def _run_and_kill(db: Path, seed: int, kill_after: int, deadline: float) -> tuple[list[str], str]:
    """Run one writer, SIGKILL it after ``kill_after`` operation lines; return its lines."""
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.store.sqlite.crash_writer", str(db), str(seed)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
        lines: queue.Queue[str | None] = queue.Queue()
        pump = threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True)
        pump.start()
        got: list[str] = []
        eof = False
        try:
            while len(got) <= kill_after:  # line 0 is "R" (opened)
                item = lines.get(timeout=max(0.1, deadline - time.monotonic()))
                if item is None:
                    eof = True
                    break
                got.append(item)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        while not eof:
            item = lines.get(timeout=10)
            if item is None:
                break
            got.append(item)
        pump.join(timeout=10)
        err.seek(0)
        stderr = err.read()
    complete = [line.strip() for line in got if line.endswith("\n")]
    assert proc.returncode == -signal.SIGKILL, f"writer ended on its own:\n{stderr}"
    return complete, stderr


def _verify(db: Path, reports: Reports) -> tuple[int, int]:
    """Check everything; returns (turns closed as crashed, drafts promoted) so far."""
    with SqliteStore(db) as store:  # opening runs crash recovery
        assert store.integrity_check() == "ok"
        assert store.turns.open_turns() == []
        rows = {sid: store.transcript.all_messages(sid) for sid in SESSIONS}
        turns = {t.id: t for sid in SESSIONS for t in store.turns.list_turns(sid)}
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()

    by_turn: dict[str, list[tuple[str, str, bool]]] = {}
    for sid, messages in rows.items():
        assert [m.position for m in messages] == list(range(len(messages))), sid
        for m in messages:
            if m.partial:  # a draft promoted by recovery: a prefix of the streamed reply
                assert m.turn_id is not None and m.role == "assistant"
                assert m.content and draft_text(m.turn_id).startswith(m.content)
            else:  # no truncated or torn text
                tag = m.content.split("|", 1)[0]
                assert m.content == payload(tag), (sid, m.position)
            if m.turn_id is not None:
                by_turn.setdefault(m.turn_id, []).append((m.role, m.content, m.partial))
    for (sid, position), tag in reports.messages.items():
        assert rows[sid][position].content == payload(tag), "a reported message was lost"

    for turn_id, turn in turns.items():
        got = by_turn.get(turn_id, [])
        prompt = ("user", payload(turn_id), False)
        if turn.status == "completed":  # the close and both replies landed together
            assert got == [
                prompt,
                ("assistant", payload(f"a-{turn_id}"), False),
                ("assistant", payload(f"b-{turn_id}"), False),
            ]
        else:  # left open by the kill: closed by recovery, replies absent, draft kept
            assert (turn.status, turn.exit_reason) == ("failed", CRASH_EXIT_REASON)
            assert got[0] == prompt and len(got) <= 2
            if turn_id in reports.drafts:
                assert len(got) == 2 and len(got[1][1]) >= reports.drafts[turn_id]
    for turn_id in reports.started:
        assert turn_id in turns, "a reported turn was lost"
    for turn_id in reports.closed:
        assert turns[turn_id].status == "completed"
    crashed = [t for t in turns.values() if t.exit_reason == CRASH_EXIT_REASON]
    promoted = sum(1 for t in crashed if len(by_turn.get(t.id, [])) == 2)
    return len(crashed), promoted


def test_sigkilled_writers_lose_nothing_they_reported(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    with SqliteStore(db) as store:
        for sid in SESSIONS:
            store.sessions.create_session(sid)
    rng = random.Random(SEED)
    reports = Reports()
    deadline = time.monotonic() + 60
    kills = 0
    crashed = promoted = 0
    for round_ in range(ROUNDS):
        kill_after = rng.choice([0, 1, 2]) if round_ % 4 == 0 else rng.randint(3, 80)
        lines, stderr = _run_and_kill(db, SEED + round_, kill_after, deadline)
        assert lines and lines[0] == "R", stderr
        for line in lines[1:]:
            reports.add(line)
        kills += 1
        crashed, promoted = _verify(db, reports)
    assert kills == ROUNDS
    assert crashed > 0 and promoted > 0, "the kills never caught an open turn"
    assert reports.closed and reports.drafts and reports.messages
