"""The prompt history kept across runs: what a second desk recalls with Up, what the file
holds, and two desks appending at once."""

from __future__ import annotations

import fcntl
import multiprocessing
import random
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from desk.history_file import MAX_SAVED_CHARS, HistoryFile, history_path
from desk.prompt_history import PromptHistory
from tests.support import poll_until


def test_a_later_run_recalls_the_earlier_run_s_prompts_newest_first(tmp_path: Path) -> None:
    path = tmp_path / "desk.db-prompts"
    first = PromptHistory(file=HistoryFile(path))
    for text in ["fix the tests", "line one\nline two", "fix the tests"]:
        first.add(text)
    later = PromptHistory(file=HistoryFile(path))
    assert later.older("") == "fix the tests"
    assert later.older("fix the tests") == "line one\nline two"
    assert later.older("line one\nline two") == "fix the tests"
    later.add("now this")  # added after the earlier ones, and kept for the next run
    assert PromptHistory(file=HistoryFile(path)).entries == [
        "fix the tests",
        "line one\nline two",
        "fix the tests",
        "now this",
    ]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # prompts may hold secrets


def test_the_file_keeps_the_newest_entries_and_skips_what_it_cannot_read(tmp_path: Path) -> None:
    path = tmp_path / "desk.db-prompts"
    path.write_bytes(b'"kept one"\nnot json\n{"a": 1}\n\xff\xfe\n"\\ud800 lone"\n"kept two"\n')
    assert HistoryFile(path).read(10) == ["kept one", "\ufffd lone", "kept two"]
    file = HistoryFile(path)
    for n in range(25):
        file.append(f"prompt {n}")
    assert file.read(5) == [f"prompt {n}" for n in range(20, 25)]
    assert len(path.read_text().splitlines()) == 5  # more than twice the entries: rewritten
    file.append("x" * (MAX_SAVED_CHARS + 1))  # a paste this long is this run's alone
    assert file.read(5)[-1] == "prompt 24"


def test_a_file_that_cannot_be_written_leaves_the_run_s_history(tmp_path: Path) -> None:
    (tmp_path / "blocked").write_text("a file where the folder should be")
    file = HistoryFile(tmp_path / "blocked" / "desk.db-prompts")
    history = PromptHistory(file=file)
    history.add("still recalled")
    assert history.older("") == "still recalled"
    assert "cannot write" in file.problem


def test_the_file_sits_beside_its_database(tmp_path: Path) -> None:
    # one history a database: two in one folder keep theirs apart
    assert history_path(str(tmp_path / "s.db")) == tmp_path / "s.db-prompts"
    assert history_path(f"sqlite://{tmp_path}/t.db") == tmp_path / "t.db-prompts"
    on_server = history_path("postgresql://desk@localhost/desk")
    assert on_server.name == "postgres-prompts" and on_server.parent.name == "desk"


def _waiting_for_lock(path: Path) -> bool:
    """True when some process waits for a lock on ``path`` (a ``->`` line of /proc/locks)."""
    inode = f":{path.stat().st_ino} "
    with open("/proc/locks") as locks:
        return any("->" in line and inode in line for line in locks)


def test_an_append_that_waited_for_a_rewrite_goes_into_the_new_file(tmp_path: Path) -> None:
    path = tmp_path / "desk.db-prompts"
    path.write_text('"old"\n')
    with open(path, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # a desk rewriting the file
        late = threading.Thread(target=HistoryFile(path).append, args=("late",))
        late.start()
        assert poll_until(lambda: _waiting_for_lock(path), timeout=10)
        fresh = tmp_path / "fresh"
        fresh.write_text('"old"\n"kept"\n')
        fresh.replace(path)  # the rewrite's new file takes the name
    late.join(timeout=10)
    assert HistoryFile(path).read(10) == ["old", "kept", "late"]


def test_a_rewrite_keeps_an_append_made_while_it_waited(tmp_path: Path) -> None:
    path = tmp_path / "desk.db-prompts"
    path.write_text("".join(f'"p{n}"\n' for n in range(30)))
    got: list[list[str]] = []
    with open(path, "ab") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another desk appending
        starting = threading.Thread(target=lambda: got.append(HistoryFile(path).read(10)))
        starting.start()
        assert poll_until(lambda: _waiting_for_lock(path), timeout=10)
        held.write(b'"appended meanwhile"\n')
    starting.join(timeout=10)
    assert got == [[*(f"p{n}" for n in range(21, 30)), "appended meanwhile"]]
    assert HistoryFile(path).read(100) == got[0]


def test_a_rewrite_that_waited_for_another_rewrites_the_new_file(tmp_path: Path) -> None:
    path = tmp_path / "desk.db-prompts"
    path.write_text("".join(f'"p{n}"\n' for n in range(30)))
    got: list[list[str]] = []
    with open(path, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another desk rewriting it
        starting = threading.Thread(target=lambda: got.append(HistoryFile(path).read(10)))
        starting.start()
        assert poll_until(lambda: _waiting_for_lock(path), timeout=10)
        fresh = tmp_path / "fresh"  # the other desk's rewrite, then an append to it
        fresh.write_text("".join(f'"p{n}"\n' for n in range(20, 30)) + '"appended after"\n')
        fresh.replace(path)
    starting.join(timeout=10)
    assert got == [[*(f"p{n}" for n in range(21, 30)), "appended after"]]
    assert HistoryFile(path).read(100)[-1] == "appended after"


def _append_all(path: Path, tag: str, count: int, start: Any) -> None:
    file = HistoryFile(path)
    start.wait(30)
    for n in range(count):
        file.append(f"{tag} {n}")
        if n % 3 == 0:
            file.read(20)  # another desk starting meanwhile: it rewrites the file past 40


def test_desks_appending_and_starting_at_once_lose_no_recent_prompt(tmp_path: Path) -> None:
    """Each desk's prompts in the file are its newest ones, in order, none missing: an append
    that waited for a rewrite went into the new file, not the one it replaced."""
    path = tmp_path / "desk.db-prompts"
    forks = multiprocessing.get_context("fork")
    start = forks.Barrier(3)
    writers = [forks.Process(target=_append_all, args=(path, t, 300, start)) for t in "abc"]
    for w in writers:
        w.start()
    for w in writers:
        w.join(timeout=60)
        assert w.exitcode == 0
    entries = HistoryFile(path).read(1000)
    assert entries
    for tag in "abc":  # a desk that finished first may have had all of its rewritten away
        numbers = [int(e.split()[1]) for e in entries if e.startswith(tag)]
        assert numbers == list(range(numbers[0] if numbers else 300, 300)), (tag, numbers)


@settings(deadline=None, max_examples=25)
@given(st.lists(st.text(min_size=1, max_size=40).filter(str.strip), max_size=30), st.randoms())
def test_what_is_added_comes_back_in_order(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str], rnd: random.Random
) -> None:
    folder = tmp_path_factory.mktemp("history")
    path = folder / "desk.db-prompts"
    history = PromptHistory(max_entries=20, file=HistoryFile(path))
    expected: list[str] = []
    for text in texts:
        history.add(text)
        if not expected or expected[-1] != text:
            expected.append(text)
        if rnd.random() < 0.2:  # a restart now and then
            history = PromptHistory(max_entries=20, file=HistoryFile(path))
    again = PromptHistory(max_entries=20, file=HistoryFile(path))
    assert again.entries == expected[-20:]
