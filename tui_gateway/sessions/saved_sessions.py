"""``session.list``, ``session.resume``, rename and delete: the gateway's saved sessions.

One collaborator of :class:`tui_gateway.gateway.Gateway`: it reads the store through the
gateway's persistence, makes resumed sessions live in the session table, and leaves every stop
(an eviction, a deletion) to the booking office.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agent.compression.plan import SUMMARY_MARKER, is_summary
from agent.provider.client import ProviderConfig
from agent.provider.types import ToolCall
from agent.store import MessageRow, SessionRow, SessionStore, StoreError, TurnRow
from agent.store.calls import calls_from_json, result_of
from agent.usage import summed
from contract.errors import GatewayError
from contract.events import StopReceipt, length_notice
from contract.results import (
    ChildCall,
    ChildOutcome,
    ResumedSession,
    SavedToolCall,
    SessionInfo,
    TranscriptEntry,
)
from tui_gateway.engine_setup import GatewayConfig
from tui_gateway.sessions.persistence import Persistence
from tui_gateway.sessions.replaced import replaced_messages
from tui_gateway.sessions.saved_events import with_events
from tui_gateway.sessions.session_table import SessionTable
from tui_gateway.sessions.state import Session, session_provider
from tui_gateway.stops.booking import BookingOffice, Publish
from tui_gateway.turns.approvals import SessionApprovals
from tui_gateway.turns.context_window import OfferedTools, SessionWindows, no_tools
from tui_gateway.turns.saved_counts import saved_budget, saved_history


class SavedSessions:
    """The saved sessions of a gateway.

    Args:
        config: the gateway's configuration (the default model of a resumed session).
        table: the live sessions.
        persistence: the store, when there is one.
        booking: evicts and deletes.
        publish: sends a payload for a session.
        windows: the sessions' context windows (a resumed one is calibrated and announced).
        tools: the tool definitions a request offers now.
        provider: the model server now (default ``config.provider``).
    """

    def __init__(
        self,
        config: GatewayConfig,
        table: SessionTable,
        persistence: Persistence,
        booking: BookingOffice,
        publish: Publish,
        windows: SessionWindows,
        tools: OfferedTools = no_tools,
        *,
        provider: Callable[[], ProviderConfig] | None = None,
    ) -> None:
        self._provider = provider or (lambda: config.provider)
        self._windows = windows
        self._tools = tools
        self._config = config
        self._table = table
        self._persistence = persistence
        self._booking = booking
        self._publish = publish

    def list_sessions(self, limit: int = 50) -> list[SessionInfo]:
        """``session.list``: live and saved sessions, most recently used first.

        Raises:
            GatewayError: when the store cannot be read.
        """
        live = {s.session_id: s for s in self._table.all()}
        infos: dict[str, SessionInfo] = {}
        store = self._persistence.store
        if store is not None:
            try:
                rows = store.sessions.list_sessions(limit=limit)
            except StoreError as exc:
                raise GatewayError(exc.message) from exc
            for row in rows:
                session = live.get(row.id)
                infos[row.id] = SessionInfo(
                    session_id=row.id,
                    title=session.title if session is not None else row.title,
                    model=row.model,
                    updated_at=row.updated_at,
                    live=session is not None,
                    running=session is not None and session.running is not None,
                )
        for session in sorted(live.values(), key=lambda s: -s.last_used):
            if session.session_id not in infos:
                infos[session.session_id] = SessionInfo(
                    session_id=session.session_id,
                    title=session.title,
                    model=session.model,
                    updated_at=None,
                    live=True,
                    running=session.running is not None,
                )
        return list(infos.values())[:limit]

    def resume(self, session_id: str | None = None) -> ResumedSession:
        """``session.resume``: make a saved session live again (the most recent when no id).

        Returns:
            the session and its transcript (archived messages left out: each summary carries
            the messages it replaced), with the events it showed among them (a compression's
            line) in their places.

        Raises:
            GatewayError: no such session, no store, the store cannot be read, or another desk
                that still runs holds the session live (one line naming it).
        """
        store = self._persistence.store
        live = self._table.find(session_id) if session_id else None
        if store is None and live is None:
            raise GatewayError(
                "saved sessions cannot be read: this run keeps its sessions in memory (no database)"
            )
        try:
            row = None
            if store is not None:
                row = (
                    _by_id_or_prefix(store, session_id)
                    if session_id
                    else store.sessions.most_recent_session()
                )
            if row is None and live is None:
                raise GatewayError(
                    f"no saved session {session_id!r}" if session_id else "no saved session yet"
                )
            if store is not None and row is not None and live is None:
                # Live in one gateway at a time: another live desk's session is refused here,
                # before anything of it is read (its transcript is still being written there).
                store.claim_session(row.id)
            messages = store.transcript.active_messages(row.id) if store is not None and row else []
            turns = store.turns.list_turns(row.id) if store is not None and row else []
            events = store.transcript.events(row.id) if store is not None and row else []
            replaced = _replaced(store, messages) if store is not None and row else {}
        except StoreError as exc:
            raise GatewayError(exc.message) from exc
        facts = _TurnFacts.of(turns)
        transcript = facts.entries(messages, replaced)
        transcript = with_events(messages, transcript, events)  # compression lines
        if live is not None:
            # Nothing saved, or not all of it yet: what memory holds.
            if store is None or live.store_detached or self._persistence.waiting(live):
                with live.lock:
                    transcript = [
                        TranscriptEntry(
                            role=m.role,
                            content=m.content,
                            tool_names=tuple(c.name for c in m.tool_calls),
                            tool_calls=_calls(m.tool_calls),
                            tool_call_id=m.tool_call_id or "",
                            summary=is_summary(m),
                        )
                        for m in live.history
                    ]
            with live.lock:
                usage = live.usage
            return ResumedSession(live.session_id, live.title, live.model, transcript, usage)
        assert row is not None
        server = self._provider()
        session = Session(session_id=row.id, title=row.title, model=row.model or server.model)
        # Prompts that never ran are marked not sent; the saved counts calibrate the session.
        session.history = saved_history(messages, turns)
        session.context = saved_budget(messages, turns, self._tools())
        session.usage = summed([t.usage for t in turns if t.usage is not None])
        session.approvals = SessionApprovals(lambda payload: self._publish(session, payload))
        session, victim = self._table.add(session)
        if victim is not None:
            self._booking.evict(victim)
        provider = session_provider(server, session)
        if provider.model:
            self._windows.announce(session, provider, self._tools())
        return ResumedSession(
            session.session_id, session.title, session.model, transcript, session.usage
        )

    def turn_session(self, turn_id: str) -> str | None:
        """The session of a turn live here or saved in the store, or None."""
        for session in self._table.all():
            with session.lock:
                if turn_id in session.turns:
                    return session.session_id
        store = self._persistence.store
        if store is None:
            return None
        try:
            turn = store.turns.get_turn(turn_id)
        except StoreError:
            return None
        return turn.session_id if turn is not None else None

    def archived(self, session_id: str) -> list[tuple[str, str]]:
        """``(role, content)`` of the messages compressions archived in the session (kept in
        the store, never deleted), oldest first; [] without a store.

        Raises:
            GatewayError: when the store cannot be read.
        """
        store = self._persistence.store
        if store is None:
            return []
        try:
            rows = store.transcript.all_messages(session_id)
        except StoreError as exc:
            raise GatewayError(exc.message) from exc
        return [(m.role, m.content) for m in rows if not m.active]

    def rename(self, session_id: str, title: str) -> None:
        """Rename a live or saved session.

        Raises:
            GatewayError: empty title, or no such session.
        """
        title = " ".join(title.split())
        if not title:
            raise GatewayError("the title is empty", code=-32602)
        session = self._table.find(session_id)
        if session is not None:  # saved in order with its other writes, never dropped
            with session.lock:
                session.title = title
            self._persistence.renamed(session, title)
            return
        store = self._persistence.store
        if store is not None:
            try:
                store.sessions.rename_session(session_id, title)
            except StoreError as exc:
                raise GatewayError(exc.message) from exc

    def release(self, session_id: str) -> bool:
        """Let an idle live session go: out of the table, its claim given back (written before
        this returns); True when it is not live here now, False when a turn runs or waits."""
        session = self._table.find(session_id)
        if session is None:
            return True
        with session.lock:
            if session.running is not None or session.queue:
                return False
            self._table.remove(session_id)
        self._persistence.released(session, wait=True)
        return True

    def delete(self, session_id: str) -> bool:
        """Delete a session for good: its running turn is stopped first (a user stop).

        Returns:
            False when there was no such session.

        Raises:
            GatewayError: when the store cannot be written.
        """
        session = self._table.find(session_id)
        if session is not None:
            self._booking.delete(session)
            self._persistence.forget(session)
        deleted = False
        store = self._persistence.store
        if store is not None:
            try:
                deleted = store.sessions.delete_session(session_id)
            except StoreError as exc:
                raise GatewayError(exc.message) from exc
        return deleted or session is not None


def _replaced(store: SessionStore, messages: list[MessageRow]) -> dict[int, list[MessageRow]]:
    """What each summary of ``messages`` (a session's active transcript) replaced, read from
    the store (nothing is read when it holds no summary).

    Raises:
        StoreError: when the store cannot be read.
    """
    if not any(m.role == "user" and m.content.startswith(SUMMARY_MARKER) for m in messages):
        return {}
    every = store.transcript.all_messages(messages[0].session_id)

    def summary_of(attempt_id: int) -> int | None:
        attempt = store.compressions.get_compression(attempt_id)
        return attempt.summary_message_id if attempt is not None else None

    return replaced_messages(messages, every, summary_of)


@dataclass(frozen=True, slots=True)
class _TurnFacts:
    """What a saved session's turns put on its messages: notes, receipts, child agents, and
    which prompts were never sent (or dismissed)."""

    notes: dict[str, str]
    receipts: dict[str, StopReceipt]
    children: dict[str, tuple[ChildOutcome, ...]]
    unsent: set[str]
    dismissed: set[str]

    @staticmethod
    def of(turns: list[TurnRow]) -> _TurnFacts:
        """The facts of a session's saved turns."""
        return _TurnFacts(
            notes={t.id: note for t in turns if (note := _turn_note(t))},
            receipts={t.id: receipt for t in turns if (receipt := _turn_receipt(t))},
            children=_children_by_root(turns),
            unsent={t.id for t in turns if t.never_ran},  # offered again (not a refused one)
            dismissed={t.id for t in turns if t.never_ran and t.dismissed},
        )

    def entries(
        self, messages: Sequence[MessageRow], replaced: dict[int, list[MessageRow]]
    ) -> list[TranscriptEntry]:
        """One entry per message, in order: a turn's note, receipt and child agents on its
        last message, and on a summary the messages it replaced (``replaced``: summary id ->
        rows), as entries too."""
        last_of_turn = {m.turn_id or "": i for i, m in enumerate(messages)}
        prompted: set[str] = set()  # turns whose prompt was seen: a later user message steered
        transcript: list[TranscriptEntry] = []
        for i, m in enumerate(messages):
            turn = m.turn_id or ""
            last = last_of_turn[turn] == i  # a turn's note goes on its last message
            summary = m.role == "user" and m.content.startswith(SUMMARY_MARKER)
            steer = m.role == "user" and bool(turn) and turn in prompted and not summary
            if m.role == "user" and turn:
                prompted.add(turn)
            earlier = replaced.get(m.id, []) if summary else []
            transcript.append(
                TranscriptEntry(
                    role=m.role,
                    content=m.content,
                    partial=m.partial,
                    tool_names=tuple(c.name for c in m.tool_calls),
                    tool_calls=_calls(m.tool_calls),
                    tool_call_id=m.tool_call_id or "",
                    note=self.notes.get(turn, "") if last else "",
                    stop=self.receipts.get(turn) if last else None,
                    summary=summary,
                    steer=steer,
                    children=self.children.get(turn, ()) if last else (),
                    unsent=m.role == "user" and turn in self.unsent,
                    dismissed=m.role == "user" and turn in self.dismissed,
                    turn_id=turn,
                    replaced=tuple(self.entries(earlier, {})),
                )
            )
        return transcript


def _calls(calls: Sequence[ToolCall]) -> tuple[SavedToolCall, ...]:
    """A message's tool calls as a frontend gets them."""
    return tuple(SavedToolCall(c.id, c.name, c.arguments) for c in calls)


def _children_by_root(turns: list[TurnRow]) -> dict[str, tuple[ChildOutcome, ...]]:
    """Child agents' turns grouped under the session's turn at the root of their tree (a
    child's child under its grandparent's turn), each group in the order they started."""
    parents = {t.id: t.parent_turn_id for t in turns}

    def root(turn_id: str) -> str:
        seen: set[str] = set()
        while (up := parents.get(turn_id)) is not None and turn_id not in seen:
            seen.add(turn_id)
            turn_id = up
        return turn_id

    grouped: dict[str, list[ChildOutcome]] = {}
    for t in turns:
        if t.parent_turn_id is None:
            continue
        outcome = ChildOutcome(
            turn_id=t.id,
            parent_turn_id=t.parent_turn_id,
            task=t.prompt,
            status=t.status,
            exit_reason=t.exit_reason or "",
            reply=t.reply or "",
            note=_child_note(t),
            prompt_tokens=t.prompt_tokens,
            completion_tokens=t.completion_tokens,
            calls=tuple(
                ChildCall(c.id, c.name, c.arguments, result_of(c), c.is_error or c.running)
                for c in calls_from_json(t.calls)
            ),
            stop=_turn_receipt(t),
            elapsed_s=t.ended_at - t.started_at if t.ended_at is not None else None,
        )
        grouped.setdefault(root(t.id), []).append(outcome)
    return {key: tuple(group) for key, group in grouped.items()}


def _turn_receipt(turn: TurnRow) -> StopReceipt | None:
    """The figures of a saved turn's stop, as its live receipt showed them (None if none).

    A prompt that was never sent has none: nothing was running to stop.
    """
    if turn.stop_issuer not in ("user", "system") or turn.not_sent:
        return None
    return StopReceipt(
        issuer=turn.stop_issuer,
        surface=turn.stop_surface or "",
        reason=turn.stop_reason or turn.stop_surface or "",
        closed_ms=turn.stop_closed_ms,
        exited_ms=turn.stop_exited_ms,
        children_ended=turn.children_ended or 0,
        tool=turn.stop_tool,
        tool_pid=turn.stop_tool_pid,
        tool_ended_ms=turn.stop_tool_ended_ms,
        usage=turn.usage if turn.usage is not None and turn.usage.requests else None,
    )


def _child_note(turn: TurnRow) -> str:
    """A saved child agent's note, as a turn's (its calls go in :attr:`ChildOutcome.calls`)."""
    return _turn_note(turn)


def _turn_note(turn: TurnRow) -> str:
    """The line a frontend shows under a saved turn: who stopped it, or why it failed.

    A queued prompt that never ran shows why, as the live desk did: ``"not sent: <reason>"``;
    a completed reply the server cut at its token limit says so, as the live desk did.
    """
    if turn.not_sent:
        return turn.error or ""
    if turn.stop_issuer == "user":
        return "stopped by you"
    if turn.stop_issuer == "system":
        return f"stopped by the system: {turn.stop_reason or turn.stop_surface}"
    if turn.status == "failed":
        return f"failed: {turn.error or turn.exit_reason}"
    if turn.status == "completed" and turn.finish_reason == "length":
        return length_notice(turn.completion_tokens)
    return ""


def _by_id_or_prefix(store: SessionStore, session_id: str) -> SessionRow | None:
    """The session ``session_id`` names: its whole id, or the start of one session's id only
    (``--resume 3f2a9c1e``, as a commit's short id); None when none.

    Raises:
        GatewayError: the start of several sessions' ids.
        StoreError: the store cannot be read.
    """
    row = store.sessions.get_session(session_id)
    if row is not None:
        return row
    found = store.sessions.ids_starting_with(session_id, limit=2)
    if len(found) > 1:
        raise GatewayError(f"{session_id!r} starts more than one saved session id: type more of it")
    return store.sessions.get_session(found[0]) if found else None
