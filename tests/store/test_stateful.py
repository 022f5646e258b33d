"""Random operations against the store, compared with a plain-list model after every step."""

from __future__ import annotations

from dataclasses import dataclass

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from agent.provider.types import ChatMessage, Role
from agent.store import NewMessage, SessionStore, StoreNotFound, TurnOutcome
from tests.store.conftest import ScriptedLiveness, StoreFactory

TEXT = st.text(max_size=40)
DONE = TurnOutcome(status="completed", exit_reason="completed")


@dataclass
class ModelTurn:
    session: str
    open: bool = True
    deleted: bool = False
    draft: str | None = None


class StoreMachine(RuleBasedStateMachine):
    """The model: per session, the active transcript as (role, content, partial) tuples.

    Args:
        factory: opens the stores of this example, on a database of its own.
    """

    def __init__(self, factory: StoreFactory) -> None:
        super().__init__()
        self.factory = factory
        self.clock = factory.clock
        self.generation = 0
        self.store = self._open()
        self.sessions: dict[str, list[tuple[str, str, bool]]] = {}
        self.appended: dict[str, int] = {}
        self.turns: dict[str, ModelTurn] = {}
        self.counter = 0

    def _owner(self) -> str:
        return f"model-host:{self.generation + 1}:1"

    def _open(self) -> SessionStore:
        owner = self._owner()
        return self.factory(liveness=ScriptedLiveness(owner, lambda o: o == owner))

    def _next(self, prefix: str) -> str:
        self.counter += 1
        self.clock.advance(1)
        return f"{prefix}{self.counter}"

    def _add(self, sid: str, role: str, content: str, partial: bool = False) -> None:
        self.sessions[sid].append((role, content, partial))
        self.appended[sid] += 1

    def teardown(self) -> None:
        self.factory.close()

    # -- rules ---------------------------------------------------------------------------------

    @initialize()
    def two_sessions(self) -> None:
        self.create_session()
        self.create_session()

    @rule()
    def create_session(self) -> None:
        sid = self._next("s")
        self.store.sessions.create_session(sid)
        self.sessions[sid] = []
        self.appended[sid] = 0

    @precondition(lambda self: self.sessions)
    @rule(
        data=st.data(),
        content=TEXT,
        partial=st.booleans(),
        role=st.sampled_from(["user", "assistant", "tool"]),
    )
    def append(self, data: st.DataObject, content: str, partial: bool, role: Role) -> None:
        sid = data.draw(st.sampled_from(sorted(self.sessions)))
        row = self.store.transcript.append_message(sid, ChatMessage(role, content), partial=partial)
        assert row.position == self.appended[sid]
        self._add(sid, role, content, partial)

    @precondition(lambda self: self.sessions)
    @rule(data=st.data(), prompt=TEXT)
    def start_turn(self, data: st.DataObject, prompt: str) -> None:
        sid = data.draw(st.sampled_from(sorted(self.sessions)))
        tid = self._next("t")
        self.store.turns.start_turn(tid, sid, prompt)
        self._add(sid, "user", prompt)
        self.turns[tid] = ModelTurn(session=sid)

    @precondition(lambda self: any(t.open and not t.deleted for t in self.turns.values()))
    @rule(data=st.data(), text=TEXT)
    def save_draft(self, data: st.DataObject, text: str) -> None:
        live = sorted(k for k, t in self.turns.items() if t.open and not t.deleted)
        tid = data.draw(st.sampled_from(live))
        assert self.store.turns.save_draft(tid, text)
        self.turns[tid].draft = text

    @precondition(lambda self: self.turns)
    @rule(data=st.data(), reply=TEXT, partial=st.booleans())
    def close_turn(self, data: st.DataObject, reply: str, partial: bool) -> None:
        """Any turn: open ones close, closed ones refuse (twice-closing), deleted ones are gone."""
        tid = data.draw(st.sampled_from(sorted(self.turns)))
        turn = self.turns[tid]
        message = NewMessage(ChatMessage("assistant", reply), partial=partial)
        if turn.deleted:
            with pytest.raises(StoreNotFound):
                self.store.turns.record_turn_end(tid, [message], DONE)
            return
        closed = self.store.turns.record_turn_end(tid, [message], DONE)
        assert closed == turn.open
        if closed:
            self._add(turn.session, "assistant", reply, partial)
            turn.open = False
            turn.draft = None

    @precondition(lambda self: self.sessions)
    @rule(data=st.data())
    def delete_session(self, data: st.DataObject) -> None:
        sid = data.draw(st.sampled_from(sorted(self.sessions)))
        assert self.store.sessions.delete_session(sid)
        del self.sessions[sid]
        for turn in self.turns.values():
            if turn.session == sid:
                turn.deleted = True
        with pytest.raises(StoreNotFound):
            self.store.transcript.append_message(sid, ChatMessage("user", "x"))

    @precondition(lambda self: any(self.sessions.values()))
    @rule(data=st.data(), summary=TEXT, cancel=st.booleans())
    def compress(self, data: st.DataObject, summary: str, cancel: bool) -> None:
        sid = data.draw(st.sampled_from(sorted(k for k, v in self.sessions.items() if v)))
        active = self.store.transcript.active_messages(sid)
        start = data.draw(st.integers(0, len(active) - 1))
        length = data.draw(st.integers(1, len(active) - start))
        holder = self._next("h")
        assert self.store.leases.acquire_lease(sid, holder, ttl_s=30)
        attempt = self.store.compressions.begin_compression(sid, holder)
        if cancel:
            assert self.store.compressions.finish_compression(attempt.id, "cancelled")
        else:
            ids = [m.id for m in active[start : start + length]]
            row = self.store.compressions.commit_compression(
                attempt.id, holder=holder, archive_ids=ids, summary=ChatMessage("user", summary)
            )
            assert row is not None and row.position == self.appended[sid]
            model = self.sessions[sid]
            model[start : start + length] = [("user", summary, False)]
            self.appended[sid] += 1
        assert self.store.leases.release_lease(sid, holder)

    @rule()
    def reopen(self) -> None:
        """Quit and start again: this process's open turns stay open."""
        self.store.close()
        self.store = self._open()

    @rule()
    def crash_and_reopen(self) -> None:
        """The owner dies: open turns close as crashed, their drafts kept as partial replies."""
        self.store.close()
        self.generation += 1
        self.store = self._open()
        for turn in self.turns.values():  # in start order, as recovery goes
            if turn.open and not turn.deleted:
                if turn.draft:
                    self._add(turn.session, "assistant", turn.draft, True)
                turn.open = False
                turn.draft = None

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def transcripts_match(self) -> None:
        assert {s.id for s in self.store.sessions.list_sessions(limit=10_000)} == set(self.sessions)
        for sid, model in self.sessions.items():
            history = self.store.transcript.load_history(sid)
            assert history == [ChatMessage(r, c) for r, c, _ in model]  # type: ignore[arg-type]
            active = self.store.transcript.active_messages(sid)
            assert [(m.role, m.content, m.partial) for m in active] == model
            positions = [m.position for m in self.store.transcript.all_messages(sid)]
            assert positions == list(range(self.appended[sid]))

    @invariant()
    def open_turns_match(self) -> None:
        expected = {k for k, t in self.turns.items() if t.open and not t.deleted}
        assert {t.id for t in self.store.turns.open_turns()} == expected


def test_store_matches_the_model(store_factory: StoreFactory) -> None:
    # A step on a server costs round trips where SQLite costs function calls (the invariants
    # read every transcript after every step): fewer examples keep the suite's time in bounds.
    examples = 20 if store_factory.backend == "sqlite" else 10
    run_state_machine_as_test(
        lambda: StoreMachine(store_factory.fresh()),
        settings=settings(
            max_examples=examples,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
