"""Nothing queued is lost: a prompt waiting behind a running turn is saved when it is queued, a
crash or a system stop keeps it as a turn that never ran (with a note saying so), and a prompt
the person removed is never saved."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from agent.store import CRASH_EXIT_REASON, NOT_SENT_CRASH_ERROR, SqliteStore, TurnRow, Turns
from contract.events import PromptQueued
from demo_model.server import DemoModelServer
from tests.store.conftest import ScriptedLiveness
from tests.support import EventLog, poll_until
from tui_gateway.gateway import Gateway, GatewayConfig

DEAD = "gone-host:4242:1"
"""The owner string of the desk that crashes in these tests."""


def open_gateway(
    provider: ProviderConfig, store: SqliteStore, **config: object
) -> tuple[Gateway, EventLog]:
    gateway = Gateway(
        GatewayConfig(provider=provider, cwd=Path(store.path).parent, **config),  # type: ignore[arg-type]
        store=store,
    )
    log = EventLog()
    gateway.subscribe(log)
    return gateway, log


def hang_first_request(demo_server: DemoModelServer) -> None:
    """The next request gets no token and hangs until its connection closes (a stop)."""
    demo_server.configure(fault="stall", fault_after_tokens=0, fault_times=1)


def submit_hanging(gateway: Gateway, session: str, demo_server: DemoModelServer) -> str:
    """Submit a prompt and return its turn id once its request hangs at the server (by then
    the turn and its prompt are saved: the request is sent after ``start_turn``)."""
    turn_id = gateway.prompt_submit(session, "hang").turn_id
    assert demo_server.records.wait_for(lambda rs: any(r.fault for r in rs), 5)
    return turn_id


def user_messages(store: SqliteStore, session: str) -> list[tuple[str | None, str]]:
    return [
        (m.turn_id, m.content) for m in store.transcript.all_messages(session) if m.role == "user"
    ]


def test_queued_prompts_survive_a_crash_and_resume_with_a_note(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    hang_first_request(demo_server)
    demo_server.configure(slots=2)  # the frozen desk's request keeps one
    gateway, _log = open_gateway(provider, SqliteStore(db, liveness=ScriptedLiveness(DEAD)))
    try:
        session = gateway.session_create()
        first = submit_hanging(gateway, session, demo_server)
        queued = [gateway.prompt_submit(session, f"queued {n}") for n in range(3)]
        assert all(q.queued for q in queued)
        assert gateway.prompt_remove(session, queued[1].turn_id)
        kept = [queued[0].turn_id, queued[2].turn_id]

        # The desk is frozen mid-turn (as if SIGKILLed); the next desk opens the file.
        after = SqliteStore(db, liveness=ScriptedLiveness(alive=lambda _owner: False))
        again, log2 = open_gateway(provider, after)
        try:
            assert after.queue.queued_prompts() == []
            assert user_messages(after, session) == [
                (first, "hang"),
                (kept[0], "queued 0"),
                (kept[1], "queued 2"),
            ]
            for turn_id in kept:
                row = after.turns.get_turn(turn_id)
                assert row is not None and row.not_sent
                assert (row.status, row.exit_reason) == ("failed", CRASH_EXIT_REASON)
            resumed = again.session_resume(session)
            notes = [(e.role, e.content, e.note) for e in resumed.transcript]
            assert notes[1:] == [
                ("user", "queued 0", NOT_SENT_CRASH_ERROR),
                ("user", "queued 2", NOT_SENT_CRASH_ERROR),
            ]
            assert notes[0][:2] == ("user", "hang") and "4242 is gone" in notes[0][2]
            assert all(e.stop is None for e in resumed.transcript)
            turn = again.prompt_submit(session, "reply with exactly: back again").turn_id
            assert log2.complete(turn).status == "completed"
            sent = [m["content"] for m in demo_server.records.last().messages]
            assert "queued 0" not in sent and "queued 2" not in sent  # never sent: not history
            # The crashed prompt got no reply: it stays out (the person sends it again if they
            # want it), rather than riding along with the next one.
            assert sent[-1] == "reply with exactly: back again"
            assert not any("hang" in text for text in sent)
        finally:
            assert again.shutdown(timeout_s=5).threads_left == []
    finally:
        assert gateway.shutdown(timeout_s=5).threads_left == []  # the frozen desk, late
    with SqliteStore(db, recover=False) as check:  # its late writes doubled nothing
        users = user_messages(check, session)
        assert users[:3] == [(first, "hang"), (kept[0], "queued 0"), (kept[1], "queued 2")]
        assert len(users) == 4 and check.queue.queued_prompts() == []
        row = check.turns.get_turn(kept[0])
        assert row is not None and row.exit_reason == CRASH_EXIT_REASON


def test_quitting_saves_queued_prompts_as_not_sent_and_forgets_removed_ones(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    hang_first_request(demo_server)
    gateway, _log = open_gateway(provider, SqliteStore(db))
    session = gateway.session_create()
    first = submit_hanging(gateway, session, demo_server)
    queued = [gateway.prompt_submit(session, f"queued {n}").turn_id for n in range(3)]
    assert gateway.prompt_remove(session, queued[1])
    report = gateway.shutdown(timeout_s=5)
    assert report.threads_left == [] and report.prompts_dropped == 2

    store = SqliteStore(
        db, liveness=ScriptedLiveness(alive=lambda _owner: False)
    )  # nothing left to recover
    again, _log2 = open_gateway(provider, store)
    try:
        assert store.queue.queued_prompts() == []
        assert user_messages(store, session) == [
            (first, "hang"),
            (queued[0], "queued 0"),
            (queued[2], "queued 2"),
        ]
        assert store.turns.get_turn(queued[1]) is None
        for turn_id in (queued[0], queued[2]):
            row = store.turns.get_turn(turn_id)
            assert row is not None and row.not_sent
            assert (row.status, row.exit_reason, row.stop_issuer, row.error) == (
                "interrupted",
                "interrupted_by_system(gateway.shutdown)",
                "system",
                "not sent: desk is shutting down",
            )
        ran = store.turns.get_turn(first)
        assert ran is not None and ran.exit_reason == "interrupted_by_system(gateway.shutdown)"
        resumed = again.session_resume(session)
        by_text = {e.content: e for e in resumed.transcript if e.role == "user"}
        assert [e.content for e in resumed.transcript if e.role == "user"] == [
            "hang",
            "queued 0",
            "queued 2",
        ]
        for text in ("queued 0", "queued 2"):
            assert by_text[text].note == "not sent: desk is shutting down"
            assert by_text[text].stop is None
    finally:
        assert again.shutdown(timeout_s=5).threads_left == []


def test_a_system_drop_while_the_desk_lives_saves_the_prompt_after_the_reply(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    hang_first_request(demo_server)
    store = SqliteStore(tmp_path / "desk.db")
    gateway, log = open_gateway(provider, store)
    try:
        session = gateway.session_create()
        first = submit_hanging(gateway, session, demo_server)
        waiting = gateway.prompt_submit(session, "queued").turn_id
        assert [q.turn_id for q in store.queue.queued_prompts(session)] == [waiting]
        assert gateway.frontend_gone() == 1
        assert gateway.turn(session, first).done.wait(5)
        row = store.turns.get_turn(waiting)
        assert row is not None and row.not_sent
        assert row.exit_reason == "interrupted_by_system(api.disconnect)"
        assert row.error == "not sent: the frontend went away"
        assert store.transcript.load_history(session) == gateway.history(session)  # memory agrees
        later = gateway.prompt_submit(session, "reply with exactly: later").turn_id
        assert log.complete(later).text == "later"
        assert [t for t, _ in user_messages(store, session)] == [first, waiting, later]
        assert store.queue.queued_prompts() == []
    finally:
        assert gateway.shutdown(timeout_s=5).threads_left == []


def test_an_evicted_session_keeps_its_queued_prompts(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    hang_first_request(demo_server)
    store = SqliteStore(tmp_path / "desk.db")
    gateway, _log = open_gateway(provider, store, max_sessions=1)
    try:
        session = gateway.session_create()
        submit_hanging(gateway, session, demo_server)
        waiting = gateway.prompt_submit(session, "queued").turn_id
        gateway.session_create()  # evicts the first session, once its turn has ended
        row = store.turns.get_turn(waiting)
        assert row is not None and row.error == "not sent: too many live sessions"
        assert store.queue.queued_prompts() == []
    finally:
        assert gateway.shutdown(timeout_s=5).threads_left == []


def test_a_queued_prompt_that_runs_is_saved_once(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    hang_first_request(demo_server)
    store = SqliteStore(tmp_path / "desk.db")
    gateway, log = open_gateway(provider, store)
    try:
        session = gateway.session_create()
        first = submit_hanging(gateway, session, demo_server)
        second = gateway.prompt_submit(session, "reply with exactly: next").turn_id
        assert [q.turn_id for q in store.queue.queued_prompts(session)] == [second]
        gateway.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY), turn_id=first)
        assert log.complete(second).text == "next"
        assert store.queue.queued_prompts() == []
        assert [t for t, _ in user_messages(store, session)] == [first, second]
        row = store.turns.get_turn(second)
        assert row is not None and row.exit_reason == "completed" and not row.not_sent
    finally:
        assert gateway.shutdown(timeout_s=5).threads_left == []


def test_deleting_a_session_forgets_its_queue(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    hang_first_request(demo_server)
    db = tmp_path / "desk.db"
    gateway, _log = open_gateway(provider, SqliteStore(db, liveness=ScriptedLiveness(DEAD)))
    try:
        session = gateway.session_create()
        submit_hanging(gateway, session, demo_server)
        gateway.prompt_submit(session, "queued")
        assert gateway.session_delete(session)
    finally:
        assert gateway.shutdown(timeout_s=5).threads_left == []
    with SqliteStore(db, liveness=ScriptedLiveness(alive=lambda _owner: False)) as check:
        assert check.queue.queued_prompts() == [] and check.sessions.list_sessions() == []


class HeldTurns:
    """Turns whose ``start_turn`` waits until the test lets it go (a turn compressing first
    takes as long); everything else is ``turns``'."""

    def __init__(self, turns: Turns) -> None:
        self._turns = turns
        self.entered = threading.Event()
        self.go = threading.Event()

    def start_turn(self, *args: Any, **kwargs: Any) -> TurnRow:
        self.entered.set()
        assert self.go.wait(5)
        return self._turns.start_turn(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._turns, name)


class HeldStart:
    """``store`` with :class:`HeldTurns` for its turns."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store
        self.turns = HeldTurns(store.turns)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_a_prompt_whose_turn_has_not_started_survives_a_crash(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    store = HeldStart(SqliteStore(db, liveness=ScriptedLiveness(DEAD)))
    gateway, _log = open_gateway(provider, store)
    try:
        session = gateway.session_create()
        first = gateway.prompt_submit(session, "about to run")
        second = gateway.prompt_submit(session, "queued")
        assert not first.queued and second.queued
        assert store.turns.entered.wait(5)
        expected = [first.turn_id, second.turn_id]
        assert poll_until(  # the second's queue row is written by the store's writer thread
            lambda: [q.turn_id for q in store.queue.queued_prompts(session)] == expected
        )
        with SqliteStore(
            db, liveness=ScriptedLiveness(alive=lambda _owner: False)
        ) as after:  # the crash
            assert user_messages(after, session) == [
                (first.turn_id, "about to run"),
                (second.turn_id, "queued"),
            ]
            assert all(t.not_sent for t in after.turns.list_turns(session))
    finally:
        store.turns.go.set()
        assert gateway.shutdown(timeout_s=5).threads_left == []


def test_an_edited_prompt_keeps_its_place_runs_with_its_new_text_and_is_saved(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    hang_first_request(demo_server)
    store = SqliteStore(tmp_path / "desk.db")
    gateway, log = open_gateway(provider, store)
    try:
        session = gateway.session_create()
        first = submit_hanging(gateway, session, demo_server)
        queued = [gateway.prompt_submit(session, f"reply with exactly: q{n}") for n in range(3)]
        middle = queued[1].turn_id
        assert gateway.prompt_edit(session, middle, "reply with exactly: edited")
        assert [q.prompt for q in store.queue.queued_prompts(session)] == [
            "reply with exactly: q0",
            "reply with exactly: edited",
            "reply with exactly: q2",
        ]

        def announced() -> list[PromptQueued]:  # events reach subscribers on their own thread
            return [p for p in log.of_type(PromptQueued) if p.turn_id == middle]

        assert log.wait_for(lambda _e: len(announced()) >= 2, 10)
        assert [(p.text, p.position) for p in announced()] == [
            ("reply with exactly: q1", 2),
            ("reply with exactly: edited", 2),
        ]
        assert not gateway.prompt_edit(session, first, "too late")  # it runs: not queued
        assert not gateway.prompt_edit(session, "nope", "x")
        gateway.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY), turn_id=first)
        for q in queued:
            log.complete(q.turn_id, timeout=10.0)
        assert gateway.turn(session, middle).result is not None
        assert log.text_of(middle) == "edited"
        assert [text for _id, text in user_messages(store, session)] == [
            "hang",
            "reply with exactly: q0",
            "reply with exactly: edited",
            "reply with exactly: q2",
        ]
        assert not gateway.prompt_edit(session, middle, "after it ran")
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []
        store.close()
