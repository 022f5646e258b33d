"""The interfaces every session store implements (SQLite today, PostgreSQL later).

A store is a few small interfaces, one per table group, reached as attributes of
:class:`SessionStore`: ``store.sessions`` (:class:`Sessions`), ``store.transcript``
(:class:`Messages`), ``store.turns`` (:class:`Turns`), ``store.queue`` (:class:`PromptQueue`),
``store.leases`` (:class:`Leases`) and ``store.compressions`` (:class:`Compressions`), so that a
second backend implements and tests them one at a time. A write that spans groups is still one
transaction, made by the group whose verb it is: :meth:`Turns.start_turn` deletes the prompt's
queued row, :meth:`PromptQueue.close_unsent_prompts` writes turns and messages,
:meth:`Compressions.commit_compression` checks the lease, archives messages and inserts the
summary.

Every method is thread-safe, every mutation is one transaction, and every failure is a
:class:`~agent.store.errors.StoreError` with a one-line message. Times are unix seconds. The
SQLite classes (:mod:`agent.store.sqlite`) document each method in full: arguments, errors, and
what exactly one transaction covers.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

from agent.provider.types import ChatMessage
from agent.store.calls import SavedCall
from agent.store.event_row import TranscriptEventRow
from agent.store.firing_row import FiringRow
from agent.store.rows import (
    CheckpointRow,
    CompressionAttemptRow,
    Cooldown,
    LeaseRow,
    MessageRow,
    NewMessage,
    QueuedPromptRow,
    SessionRow,
    TurnOutcome,
    TurnRow,
)


@runtime_checkable
class Sessions(Protocol):
    """Durable sessions: create, find, list, rename, delete."""

    def create_session(
        self,
        session_id: str | None = None,
        *,
        title: str = "",
        model: str = "",
        cwd: str = "",
        created_at: float | None = None,
        messages: Sequence[ChatMessage | NewMessage] = (),
    ) -> SessionRow:
        """Create a session with its first messages, in one transaction."""
        ...

    def get_session(self, session_id: str) -> SessionRow | None:
        """The session or None."""
        ...

    def list_sessions(self, limit: int = 50, offset: int = 0) -> list[SessionRow]:
        """Sessions, most recently updated first."""
        ...

    def ids_starting_with(self, prefix: str, limit: int = 2) -> list[str]:
        """Ids of sessions that start with ``prefix`` (at most ``limit``, in id order)."""
        ...

    def most_recent_session(self) -> SessionRow | None:
        """The most recently updated session, or None."""
        ...

    def rename_session(self, session_id: str, title: str) -> None:
        """Set the title; ``StoreNotFound`` when there is no such session."""
        ...

    def set_last_error(self, session_id: str, error: str | None) -> None:
        """Remember the last error shown for a session."""
        ...

    def set_session_model(self, session_id: str, model: str) -> None:
        """Set the model the session goes on with; ``StoreNotFound`` when there is none."""
        ...

    def delete_session(self, session_id: str) -> bool:
        """Delete a session and everything in it; False when absent."""
        ...


@runtime_checkable
class Messages(Protocol):
    """A session's messages: append, and read the active transcript or all of it."""

    def append_message(
        self,
        session_id: str,
        message: ChatMessage | NewMessage,
        *,
        turn_id: str | None = None,
        partial: bool = False,
        reasoning: str | None = None,
        token_estimate: int | None = None,
    ) -> MessageRow:
        """Append one message at the next position."""
        ...

    def append_messages(
        self,
        session_id: str,
        messages: Sequence[ChatMessage | NewMessage],
        *,
        turn_id: str | None = None,
    ) -> list[MessageRow]:
        """Append several messages, all or none."""
        ...

    def active_messages(self, session_id: str) -> list[MessageRow]:
        """The active transcript, in order."""
        ...

    def active_message_ids(self, session_id: str) -> list[int]:
        """Ids of the active transcript's messages, in order."""
        ...

    def all_messages(self, session_id: str) -> list[MessageRow]:
        """Every message, archived included, in append order."""
        ...

    def load_history(self, session_id: str) -> list[ChatMessage]:
        """The transcript sent to the model."""
        ...

    def append_event(
        self, session_id: str, type: str, payload: str, *, turn_id: str | None = None
    ) -> TranscriptEventRow:
        """Keep an event the person saw among the messages, after the last one."""
        ...

    def events(self, session_id: str) -> list[TranscriptEventRow]:
        """The events kept for the session, in order."""
        ...


@runtime_checkable
class Turns(Protocol):
    """Turns and their one terminal outcome; crash recovery of open turns."""

    def start_turn(
        self,
        turn_id: str,
        session_id: str,
        prompt: str,
        started_at: float | None = None,
        *,
        record_prompt: bool = True,
        parent_turn_id: str | None = None,
        model: str | None = None,
    ) -> TurnRow:
        """Write a running turn and its prompt message, in one transaction (a child agent's
        turn, under ``parent_turn_id``, records no message)."""
        ...

    def save_draft(self, turn_id: str, text: str, *, wait: bool = True) -> bool:
        """Checkpoint the streamed reply of an open turn."""
        ...

    def save_calls(self, turn_id: str, calls: Sequence[SavedCall]) -> bool:
        """Save an open turn's tool calls as they stand (crash recovery writes them)."""
        ...

    def record_turn_end(
        self,
        turn_id: str,
        messages: Sequence[ChatMessage | NewMessage],
        outcome: TurnOutcome,
    ) -> bool:
        """Append the turn's messages and close it, once; False when closed already."""
        ...

    def close_turn(self, turn_id: str, outcome: TurnOutcome) -> bool:
        """Close a turn, once; False when closed already."""
        ...

    def dismiss_unsent(self, turn_id: str) -> bool:
        """Mark a prompt that was never sent as dismissed by the person (offered no more);
        False when nothing changed."""
        ...

    def get_turn(self, turn_id: str) -> TurnRow | None:
        """The turn or None."""
        ...

    def list_turns(self, session_id: str) -> list[TurnRow]:
        """The session's turns, oldest first."""
        ...

    def open_turns(self) -> list[TurnRow]:
        """Turns without an outcome."""
        ...

    def recover_open_turns(self, *, include_live: bool = False) -> list[str]:
        """Close turns of dead processes as ``failed(Crash)``."""
        ...


@runtime_checkable
class PromptQueue(Protocol):
    """Prompts saved while they wait for their turn to start."""

    def queue_prompt(
        self, turn_id: str, session_id: str, prompt: str, queued_at: float | None = None
    ) -> bool:
        """Save a prompt waiting for its turn to start; False when its turn exists already."""
        ...

    def remove_queued_prompt(self, turn_id: str) -> bool:
        """Forget a queued prompt the person removed; False when it was not queued."""
        ...

    def edit_queued_prompt(self, turn_id: str, prompt: str) -> bool:
        """Replace a queued prompt's text, keeping its place; False when it was not queued."""
        ...

    def queued_prompts(self, session_id: str | None = None) -> list[QueuedPromptRow]:
        """Queued prompts of a session (or all), in queue order."""
        ...

    def close_unsent_prompts(
        self, session_id: str, prompts: Sequence[tuple[str, str]], outcome: TurnOutcome
    ) -> list[str]:
        """Close dropped queued prompts as turns that never ran, in order, in one transaction."""
        ...

    def recover_queued_prompts(self, *, include_live: bool = False) -> list[str]:
        """Close prompts dead processes left queued as ``failed(Crash)`` turns that never ran."""
        ...


@runtime_checkable
class Leases(Protocol):
    """Each session's compression lease: who may commit a compression now."""

    def acquire_lease(self, session_id: str, holder: str, ttl_s: float) -> bool:
        """Take the lease if absent, expired or already ours."""
        ...

    def renew_lease(self, session_id: str, holder: str, ttl_s: float) -> bool:
        """Extend our unexpired lease."""
        ...

    def release_lease(self, session_id: str, holder: str) -> bool:
        """Delete the lease row only if it is ours."""
        ...

    def get_lease(self, session_id: str) -> LeaseRow | None:
        """The lease row or None."""
        ...


@runtime_checkable
class Compressions(Protocol):
    """Compression attempts and the automatic-compression cooldown."""

    def set_cooldown(self, session_id: str, until: float | None, step: int) -> None:
        """Set the automatic-compression cooldown."""
        ...

    def get_cooldown(self, session_id: str) -> Cooldown | None:
        """The cooldown, or None for an unknown session."""
        ...

    def begin_compression(
        self, session_id: str, holder: str, *, phase: str = "acquire lease"
    ) -> CompressionAttemptRow:
        """Start an attempt with the next generation."""
        ...

    def set_compression_phase(self, attempt_id: int, phase: str) -> bool:
        """Record the phase of an open attempt."""
        ...

    def get_compression(self, attempt_id: int) -> CompressionAttemptRow | None:
        """The attempt or None."""
        ...

    def latest_compression(self, session_id: str) -> CompressionAttemptRow | None:
        """The newest attempt or None."""
        ...

    def commit_compression(
        self,
        attempt_id: int,
        *,
        holder: str,
        archive_ids: Sequence[int],
        summary: ChatMessage | NewMessage,
        tokens_in: int | None = None,
        tokens_out: int | None = None,
        release: bool = False,
    ) -> MessageRow | None:
        """Archive a run and insert its summary in one transaction, or change nothing."""
        ...

    def finish_compression(
        self,
        attempt_id: int,
        outcome: str,
        *,
        error: str | None = None,
        cooldown: Cooldown | None = None,
        tokens_in: int | None = None,
        tokens_out: int | None = None,
        release: bool = False,
    ) -> bool:
        """End an attempt that did not commit, once."""
        ...

    def recover_abandoned_compressions(self) -> list[int]:
        """End attempts whose lease is gone, as ``abandoned``."""
        ...


@runtime_checkable
class Checkpoints(Protocol):
    """What files held before each turn changed them, so a turn can be undone (``/undo``)."""

    def record_before(
        self, session_id: str, turn_id: str, path: str, before_data: bytes | None
    ) -> bool:
        """Keep what ``path`` holds before the turn's first change to it (None: no file);
        False when the turn recorded that path already (the first record stands)."""
        ...

    def record_after(self, turn_id: str, path: str, after_sha: str) -> bool:
        """Note the SHA-256 of what ``path`` holds once the turn is done with it ("" for no
        file); False when the turn recorded no such path."""
        ...

    def checkpoint_files(self, session_id: str) -> list[CheckpointRow]:
        """Every recorded file of the session, undone ones included, by step then record."""
        ...

    def mark_undone(self, session_id: str, step: int) -> int:
        """Mark one step's files as undone; how many rows changed (0: none or done already)."""
        ...


@runtime_checkable
class SessionStore(Protocol):
    """Durable sessions, transcripts, turns, queued prompts and compression state: one table
    group per attribute, each its own interface (the groups of one store share its database,
    and a write one group makes is seen by the others at once)."""

    @property
    def sessions(self) -> Sessions:
        """Sessions (:class:`Sessions`)."""
        ...

    @property
    def transcript(self) -> Messages:
        """The sessions' messages (:class:`Messages`)."""
        ...

    @property
    def turns(self) -> Turns:
        """Turns and their outcomes (:class:`Turns`)."""
        ...

    @property
    def queue(self) -> PromptQueue:
        """Prompts waiting for their turn (:class:`PromptQueue`)."""
        ...

    @property
    def leases(self) -> Leases:
        """Compression leases (:class:`Leases`)."""
        ...

    @property
    def compressions(self) -> Compressions:
        """Compression attempts and cooldowns (:class:`Compressions`)."""
        ...

    @property
    def checkpoints(self) -> Checkpoints:
        """What files held before each turn changed them (:class:`Checkpoints`)."""
        ...

    @property
    def firings(self) -> Firings:
        """The firings of schedules and their sessions (:class:`Firings`)."""
        ...

    @property
    def owner(self) -> str:
        """The owner string written on the turns and queued prompts this store starts (its
        :class:`~agent.store.liveness.OwnerLiveness` names it)."""
        ...

    def claim_session(self, session_id: str) -> int:
        """Take (or keep) the session for this store's owner now: a session is live in one
        gateway at a time. Creating a session claims it too; an owner that is provably gone
        loses its claims at once.

        Returns:
            the fencing number the claim holds now.

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another owner holds it and still runs (a one-line message naming
                the session).
        """
        ...

    def release_session(self, session_id: str) -> None:
        """Give the session's claim back (it is live here no more); nothing when not held.
        :meth:`close` gives back every claim the store took."""
        ...

    def schema_version(self) -> int:
        """The schema version of the database (1, 2, 3...)."""
        ...

    def sync_after(self) -> AbstractContextManager[None]:
        """A block whose commits, made by the calling thread, may be made durable together
        when it ends instead of one by one: each survives a killed process and is read by
        others once committed, and all survive a power cut once the block has ended.

        Raises:
            OSError: at the block's end, when the disk could not sync (the commits stand).
        """
        ...

    def defer_sync(self) -> None:
        """The store closes soon (a quit): its commits from now on may be made durable
        together by :meth:`close` instead of one by one; each still survives a killed
        process, and all are durable once :meth:`close` returned."""
        ...

    def close(self) -> None:
        """Release the connections (idempotent); later calls of any group raise
        :class:`~agent.store.errors.StoreClosed`."""
        ...


@runtime_checkable
class Firings(Protocol):
    """The firings of schedules (``[schedules.NAME]``): one row per schedule and due time, so
    that exactly one host runs each; and the session each schedule's turns go to."""

    def claim_firing(self, schedule: str, due_at: float) -> bool:
        """Insert the firing's row for this store's owner, or nothing when it exists: True
        when this store won it (it runs it), False when another did."""
        ...

    def start_firing(self, schedule: str, due_at: float, session_id: str, turn_id: str) -> bool:
        """Note the session and turn of a firing this store won; False when it has none."""
        ...

    def end_firing(self, schedule: str, due_at: float, outcome: str) -> bool:
        """Note a firing's outcome (an exit reason, or why no turn ran), once."""
        ...

    def last_firings(self, schedule: str, limit: int = 1) -> list[FiringRow]:
        """The schedule's firings, newest due time first."""
        ...

    def bind_session(self, schedule: str, session_id: str) -> str:
        """Make ``session_id`` the schedule's session unless it has one: the one it has now."""
        ...

    def schedule_session(self, schedule: str) -> str | None:
        """The schedule's session, or None before its first firing (or once deleted)."""
        ...
