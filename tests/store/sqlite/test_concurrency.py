"""Many writers at once: no "database is locked", positions contiguous, per-writer order kept."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
import threading
from collections import defaultdict
from pathlib import Path

from agent.provider.types import ChatMessage
from agent.store import SqliteStore, StoreError, TurnOutcome

ROOT = Path(__file__).resolve().parents[3]
THREADS = 8
SESSIONS = 4
PER_THREAD = 60


def _run_threads(target: object, count: int) -> list[BaseException]:
    errors: list[BaseException] = []

    def guarded(n: int) -> None:
        try:
            target(n)  # type: ignore[operator]
        except BaseException as exc:  # collected and asserted on below
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive()
    return errors


def _check(store: SqliteStore, sessions: list[str], expected: int) -> None:
    for sid in sessions:
        rows = store.transcript.all_messages(sid)
        assert [m.position for m in rows] == list(range(len(rows)))
        by_writer: dict[str, list[int]] = defaultdict(list)
        for m in rows:
            if m.content.startswith("w"):
                writer, _, n = m.content.partition(":")
                by_writer[writer].append(int(n))
        for seq in by_writer.values():
            assert seq == sorted(seq)
    total = sum(len(store.transcript.all_messages(s)) for s in sessions)
    assert total == expected
    assert store.integrity_check() == "ok"


def test_eight_threads_one_store(db_path: Path) -> None:
    store = SqliteStore(db_path)
    sessions = [store.sessions.create_session(f"s{i}").id for i in range(SESSIONS)]
    barrier = threading.Barrier(THREADS)

    def work(n: int) -> None:
        barrier.wait(timeout=10)
        for i in range(PER_THREAD):
            sid = sessions[(n + i) % SESSIONS]
            if i % 10 == 0:
                turn = f"t{n}-{i}"
                store.turns.start_turn(turn, sid, f"w{n}:{i}")
                store.turns.record_turn_end(
                    turn,
                    [ChatMessage("assistant", f"w{n}:{i}")],
                    TurnOutcome(status="completed", exit_reason="completed"),
                )
            else:
                store.transcript.append_message(sid, ChatMessage("user", f"w{n}:{i}"))
            if i % 7 == 0:
                store.transcript.load_history(sid)  # readers interleave with the writers

    try:
        errors = _run_threads(work, THREADS)
        assert errors == []
        turns = THREADS * len(range(0, PER_THREAD, 10))
        _check(store, sessions, THREADS * PER_THREAD + turns)
        assert store.turns.open_turns() == []
    finally:
        store.close()


def test_eight_threads_eight_stores_on_one_file(db_path: Path) -> None:
    SqliteStore(db_path).close()
    barrier = threading.Barrier(THREADS)
    stores: list[SqliteStore] = []

    def work(n: int) -> None:
        s = SqliteStore(db_path)  # opened concurrently: migration and recovery race too
        stores.append(s)
        barrier.wait(timeout=10)
        for i in range(PER_THREAD // 2):
            sid = f"s{(n + i) % SESSIONS}"
            if s.sessions.get_session(sid) is None:
                with contextlib.suppress(StoreError):  # another thread created it first
                    s.sessions.create_session(sid)
            s.transcript.append_message(sid, ChatMessage("user", f"w{n}:{i}"))

    try:
        errors = _run_threads(work, THREADS)
        assert errors == []
        with SqliteStore(db_path) as s:
            _check(s, [f"s{i}" for i in range(SESSIONS)], THREADS * (PER_THREAD // 2))
    finally:
        for s in stores:
            s.close()


_WRITER = textwrap.dedent(
    """
    import sys
    from agent.provider.types import ChatMessage
    from agent.store import SqliteStore
    path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    sys.stdin.readline()  # start together
    with SqliteStore(path) as s:
        for i in range(count):
            s.transcript.append_message("shared", ChatMessage("user", f"w{name}:{i}"))
    print("done", flush=True)
    """
)


def test_two_processes_and_a_thread_write_one_session(db_path: Path) -> None:
    with SqliteStore(db_path) as s:
        s.sessions.create_session("shared")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(db_path), f"p{n}", "150"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    try:
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        with SqliteStore(db_path) as s:
            for i in range(150):
                s.transcript.append_message("shared", ChatMessage("user", f"wmain:{i}"))
        for p in procs:
            out, err = p.communicate(timeout=60)
            assert p.returncode == 0, err
            assert out.strip() == "done"
        with SqliteStore(db_path) as s:
            _check(s, ["shared"], 450)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
