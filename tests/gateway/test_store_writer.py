"""The gateway's writer thread on a real SQLite store: the last text noted before a quit is
written by the quit, every piece noted is in the draft, and writes land in order, once, however
often the database is busy (a property over random schedules of busy and failed writes)."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.store import SqliteStore, StoreLocked, StoreReadOnly
from agent.store.sql.turns import SqlTurns
from contract.events import Payload, StoreFailed, StoreWaiting
from tests.support import poll_until
from tui_gateway.sessions.state import Session
from tui_gateway.sessions.store_writer import PendingWrite, StoreWriter
from tui_gateway.sessions.unsaved import Unsaved


def open_turn(db: Path) -> tuple[SqliteStore, Session]:
    store = SqliteStore(db)
    store.sessions.create_session("s")
    store.turns.start_turn("t", "s", "a prompt")
    return store, Session("s", title="", model="demo")


def draft(store: SqliteStore) -> str | None:
    row = store.turns.get_turn("t")
    return row.draft if row is not None else None


def test_the_last_text_before_a_quit_is_in_the_database(tmp_path: Path) -> None:
    store, session = open_turn(tmp_path / "desk.db")
    published: list[Payload] = []
    writer = StoreWriter(store, lambda _s, p: published.append(p), draft_interval_s=3600.0)
    try:
        writer.note_text(session, "t", "all of ")
        assert poll_until(lambda: draft(store) == "all of ")  # the first piece goes at once
        writer.note_text(session, "t", "it")  # the next would wait an hour
        assert writer.close(timeout_s=10) == {}
        assert draft(store) == "all of it"
        assert published == []
    finally:
        store.close()


def test_every_piece_noted_is_in_the_draft(tmp_path: Path) -> None:
    store, session = open_turn(tmp_path / "desk.db")
    writer = StoreWriter(store, lambda _s, _p: None, draft_interval_s=3600.0)
    try:
        pieces = [f"{n} " for n in range(5000)]
        for piece in pieces:
            writer.note_text(session, "t", piece)
        assert writer.draft_text("t") == "".join(pieces)
        writer.close(timeout_s=10)
        assert draft(store) == "".join(pieces)
    finally:
        store.close()


@dataclass
class Script:
    """Writes whose outcome the test decides: how many times each meets a busy database first,
    and which one fails for good."""

    transient: list[int]
    fatal_at: int | None
    applied: list[int] = field(default_factory=list)

    def write(self, index: int) -> Callable[[object], object]:
        left = [self.transient[index]]

        def apply(_store: object) -> object:
            if left[0] > 0:
                left[0] -= 1
                raise StoreLocked("the database is busy (scripted)")
            if index == self.fatal_at:
                raise StoreReadOnly("the database is read-only (scripted)")
            self.applied.append(index)
            return index

        return apply


@settings(max_examples=40, deadline=None)
@given(
    transient=st.lists(st.integers(0, 3), min_size=1, max_size=12),
    fatal=st.none() | st.integers(0, 11),
)
def test_writes_land_in_order_once_however_often_the_database_is_busy(
    transient: list[int], fatal: int | None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Each write meets a busy database a random number of times; one may fail for good. The
    ones before a fatal failure land in order, once each; from it on, nothing is written and
    everything is exported, in order; the session is told it waits, and given up at most once."""
    folder = tmp_path_factory.mktemp("unsaved")
    fatal_at = fatal if fatal is not None and fatal < len(transient) else None
    script = Script(transient, fatal_at)
    published: list[Payload] = []
    session = Session("s", title="", model="demo")
    with SqliteStore(":memory:") as store:
        writer = StoreWriter(
            store, lambda _s, p: published.append(p), unsaved_dir=folder, retry_s=(0.001, 0.004)
        )
        writes = [
            PendingWrite(session, f"write {i}", script.write(i), Unsaved(f"write {i}", "s"))
            for i in range(len(transient))
        ]
        for write in writes:
            writer.submit(write)
        for write in writes:
            assert write.done.wait(30)
        writer.close(timeout_s=10)
    end = len(transient) if fatal_at is None else fatal_at
    assert script.applied == list(range(end))
    assert [w.written for w in writes] == [i < end for i in range(len(writes))]
    failed = [p for p in published if isinstance(p, StoreFailed)]
    waits = [p for p in published if isinstance(p, StoreWaiting)]
    if any(transient[:end]):
        assert waits and waits[0].waiting
    if fatal_at is None:
        assert failed == [] and not session.store_detached
        assert not waits or not waits[-1].waiting  # told when all was saved again
    else:
        (gave_up,) = failed
        lines = Path(gave_up.unsaved).read_text().splitlines()
        assert [json.loads(line)["action"] for line in lines] == [
            f"write {i}" for i in range(fatal_at, len(transient))
        ]


# -- what the writer did not expect: it says so in one line, saves what it can, goes on -----


class DraftsThatFailOnce(SqlTurns):
    """The real turns table, whose next draft write raises what no store raises (a bug)."""

    failures = 1

    def save_draft(self, turn_id: str, text: str, *, wait: bool = True) -> bool:
        if self.failures:
            self.failures -= 1
            raise ZeroDivisionError("a bug in the draft write")
        return super().save_draft(turn_id, text, wait=wait)


def test_a_draft_write_that_raises_what_no_store_raises_is_logged_and_the_writer_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store, session = open_turn(tmp_path / "desk.db")
    store.turns.__class__ = DraftsThatFailOnce
    writer = StoreWriter(store, lambda _s, _p: None, draft_interval_s=0.01)
    try:
        with caplog.at_level(logging.ERROR, logger="tui_gateway.sessions.store_writer"):
            writer.note_text(session, "t", "first ")
            assert poll_until(lambda: "a bug in the draft write" in caplog.text)
        (line,) = [r.getMessage() for r in caplog.records]
        assert "ZeroDivisionError" in line and "\n" not in line
        writer.note_text(session, "t", "second")
        assert poll_until(lambda: draft(store) == "first second")
        done = PendingWrite(session, "close", lambda s: s.turns.get_turn("t"), Unsaved("x", "s"))
        writer.submit(done)
        assert done.done.wait(10) and done.written
    finally:
        writer.close(timeout_s=10)
        store.close()


def test_a_publish_that_raises_does_not_end_the_writer(tmp_path: Path) -> None:
    """The gateway's publish never raises; if it ever did, the writes behind go on."""
    store, session = open_turn(tmp_path / "desk.db")
    calls: list[Payload] = []

    def publish(_session: Session, payload: Payload) -> None:
        calls.append(payload)
        raise RuntimeError("a subscriber bug")

    busy = [2]

    def apply(_store: object) -> object:
        if busy[0]:
            busy[0] -= 1
            raise StoreLocked("the database is busy (scripted)")
        return "ok"

    writer = StoreWriter(store, publish, retry_s=(0.001, 0.004))
    try:
        first = PendingWrite(session, "first", apply, Unsaved("first", "s"))
        writer.submit(first)  # busy: "waiting" is published, and raises
        assert first.done.wait(10) and first.written
        second = PendingWrite(session, "second", lambda _s: "ok", Unsaved("second", "s"))
        writer.submit(second)
        assert second.done.wait(10) and second.written
        assert any(isinstance(p, StoreWaiting) for p in calls)
    finally:
        writer.close(timeout_s=10)
        store.close()


def test_a_draft_with_a_lone_surrogate_is_saved_as_a_replacement_character(
    tmp_path: Path,
) -> None:
    store, session = open_turn(tmp_path / "desk.db")
    writer = StoreWriter(store, lambda _s, _p: None, draft_interval_s=0.01)
    try:
        writer.note_text(session, "t", "a\ud800")
        writer.note_text(session, "t", "b")
        assert poll_until(lambda: draft(store) == "a\ufffdb")
    finally:
        writer.close(timeout_s=10)
        store.close()


def test_a_write_that_raises_what_no_store_raises_exports_its_session_and_others_go_on(
    tmp_path: Path,
) -> None:
    """A real write of text that cannot be encoded (it escaped the boundary: a bug) raises
    ``UnicodeEncodeError`` inside SQLite's driver; its session is exported, with the text
    valid, and another session's writes land."""
    store, session = open_turn(tmp_path / "desk.db")
    store.sessions.create_session("other")
    other = Session("other", title="", model="demo")
    published: list[Payload] = []
    writer = StoreWriter(store, lambda _s, p: published.append(p), unsaved_dir=tmp_path / "unsaved")
    try:
        bad = PendingWrite(
            session,
            "save the title",
            lambda s: s.sessions.rename_session("s", "x\ud800"),
            Unsaved("save the title", "s", title="x\ud800"),
        )
        writer.submit(bad)
        assert bad.done.wait(10) and not bad.written
        good = PendingWrite(
            other,
            "save the title",
            lambda s: s.sessions.rename_session("other", "fine"),
            Unsaved("save the title", "other", title="fine"),
        )
        writer.submit(good)
        assert good.done.wait(10) and good.written
    finally:
        writer.close(timeout_s=10)
    (failed,) = [p for p in published if isinstance(p, StoreFailed)]
    assert "UnicodeEncodeError" in failed.message and "\n" not in failed.message
    (record,) = [json.loads(line) for line in Path(failed.unsaved).read_text("utf-8").splitlines()]
    assert record["title"] == "x\ufffd"
    assert {s.id: s.title for s in store.sessions.list_sessions(10)}["other"] == "fine"
    store.close()


class HeldSync(SqliteStore):
    """A real store whose :meth:`sync_after` blocks end (the disk syncing) wait for
    :attr:`gate`; :attr:`syncing` is set when one waits."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.gate = threading.Event()
        self.syncing = threading.Event()

    @contextmanager
    def sync_after(self) -> Iterator[None]:
        with super().sync_after():
            yield
            self.syncing.set()
            self.gate.wait(30)


def test_the_waiter_of_a_write_goes_on_while_the_disk_syncs(tmp_path: Path) -> None:
    store = HeldSync(tmp_path / "desk.db")
    store.sessions.create_session("s")
    store.turns.start_turn("t", "s", "a prompt")
    session = Session("s", title="", model="demo")
    writer = StoreWriter(store, lambda _s, _p: None)
    try:
        write = PendingWrite(
            session,
            "save the reply",
            lambda s: s.sessions.rename_session("s", "saved"),
            Unsaved("save the reply", "s"),
        )
        writer.submit(write)
        # Told "written" (the turn's end is shown next) while the disk still syncs it.
        assert writer.wait(write, 30) and write.written
        assert store.syncing.wait(30) and not store.gate.is_set()
        fresh = SqliteStore(tmp_path / "desk.db", recover=False)
        try:
            saved = fresh.sessions.get_session("s")
            assert saved is not None and saved.title == "saved"  # committed: others read it
        finally:
            fresh.close()
    finally:
        store.gate.set()
        writer.close(timeout_s=10)
        store.close()
