"""The gateway's writer thread on a real SQLite store: drafts are coalesced, and the last text
noted before a quit is written by the quit."""

from __future__ import annotations

from pathlib import Path

from agent.store import SqliteStore
from tests.support import poll_until
from tui_gateway.events import Payload
from tui_gateway.state import Session
from tui_gateway.store_writer import StoreWriter


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
