"""What the demo server saw and did for each chat-completion request, with monotonic timings."""

from __future__ import annotations

import builtins
import copy
import dataclasses
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

OUTCOMES: tuple[str, ...] = (
    "running",
    "completed",
    "client_closed",
    "fault",
    "rejected",
    "server_stopped",
    "error",
)
"""Possible `RequestRecord.outcome` values."""


@dataclass
class RequestRecord:
    """One chat-completion request as the server handled it.

    All times are ``time.monotonic()`` seconds. On Linux that clock (CLOCK_MONOTONIC) is
    system-wide, so a test in another process can compare its own ``time.monotonic()`` with
    these values.

    Attributes:
        id: 1, 2, 3... in arrival order, per server.
        path: the request path, e.g. ``"/v1/chat/completions"``.
        stream: whether the request asked for a stream.
        model: the model the request named (``None`` when it named none).
        messages: the request's messages.
        request: the whole request body as parsed JSON.
        started_at: when the request reached the app (headers received).
        slot_id: the slot the request was generated in.
        slot_acquired_at: when it got a slot.
        headers_sent_at: when the response status and headers were sent. For a non-streaming
            reply that is after the whole generation.
        first_token_at: when the first token was generated (and, streaming, sent).
        peer_closed_at: when the server noticed that the client had closed the connection.
        completed_at: when the server finished the response (``None`` if the client left
            first, or the connection was dropped on purpose).
        slot_released_at: when the slot was freed (``None`` if it never had one).
        tokens_generated: completion tokens generated so far.
        prompt_tokens: the prompt size in tokens (see `replies.count_prompt_tokens`).
        text: the content text generated so far.
        status: the HTTP status sent, once sent.
        finish_reason: the finish reason sent, if any.
        fault: the injected fault that applied to this request, if any.
        error: the error message of a rejected request.
        outcome: one of `OUTCOMES`: ``"running"`` until the request ends; ``"completed"``;
            ``"client_closed"`` (the client went away first); ``"fault"`` (an injected fault
            ended it); ``"rejected"`` (a 4xx before generation: bad body, auth, unknown
            model, prompt too long); ``"server_stopped"`` (the server shut down under it);
            ``"error"`` (the demo server itself failed: a bug).
    """

    id: int
    path: str
    started_at: float
    stream: bool = False
    model: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    request: dict[str, Any] = field(default_factory=dict)
    slot_id: int | None = None
    slot_acquired_at: float | None = None
    headers_sent_at: float | None = None
    first_token_at: float | None = None
    peer_closed_at: float | None = None
    completed_at: float | None = None
    slot_released_at: float | None = None
    tokens_generated: int = 0
    prompt_tokens: int = 0
    text: str = ""
    status: int | None = None
    finish_reason: str | None = None
    fault: str | None = None
    error: str | None = None
    outcome: str = "running"

    @property
    def finished(self) -> bool:
        """Whether the request has ended (its outcome is no longer ``"running"``)."""
        return self.outcome != "running"

    def to_dict(self) -> dict[str, Any]:
        """Return the record as a JSON-ready dict."""
        return dataclasses.asdict(self)


class RecordBook:
    """Thread-safe list of `RequestRecord`, filled by the server, read by tests.

    The server thread changes records only inside `edit`, which notifies waiters; `list`,
    `last`, `get` and `wait_for_record` return snapshots (copies).

    The server updates a record *before* writing the bytes that reveal the change: once a
    client has read a token, ``tokens_generated`` counts it; once it has read the end of a
    response, the record is finished (``outcome``, ``completed_at``, ``slot_released_at``).
    Only what the server learns from the client (``peer_closed_at``, ``client_closed``) needs a
    `wait_for`.

    Args:
        max_records: keep at most this many records, dropping the oldest (``None``: no bound).
    """

    def __init__(self, max_records: int | None = 1000) -> None:
        self._cond = threading.Condition()
        self._records: deque[RequestRecord] = deque(maxlen=max_records)
        self._next_id = 1

    def new(self, path: str, started_at: float | None = None) -> RequestRecord:
        """Create, store and return a live record with the next id (server side)."""
        with self._cond:
            record = RequestRecord(
                id=self._next_id,
                path=path,
                started_at=time.monotonic() if started_at is None else started_at,
            )
            self._next_id += 1
            self._records.append(record)
            self._cond.notify_all()
            return record

    @contextmanager
    def edit(self) -> Iterator[None]:
        """Hold the book's lock while live records are changed, then wake waiters."""
        with self._cond:
            try:
                yield
            finally:
                self._cond.notify_all()

    def list(self) -> builtins.list[RequestRecord]:
        """Return snapshots of all records, oldest first."""
        with self._cond:
            return [copy.copy(record) for record in self._records]

    def last(self) -> RequestRecord | None:
        """Return a snapshot of the newest record, or ``None`` when there is none."""
        with self._cond:
            return copy.copy(self._records[-1]) if self._records else None

    def get(self, record_id: int) -> RequestRecord | None:
        """Return a snapshot of the record with this id, or ``None``."""
        with self._cond:
            for record in self._records:
                if record.id == record_id:
                    return copy.copy(record)
            return None

    def wait_for(
        self,
        predicate: Callable[[builtins.list[RequestRecord]], bool],
        timeout: float,
    ) -> bool:
        """Block until ``predicate(records)`` is true, or the timeout passes.

        The predicate runs now and after every change, with the book's lock held, on the live
        records (oldest first) so that it costs nothing to evaluate: keep it quick, do not
        change or keep the records, and do not call back into the book. Use `list`,
        `get` or `wait_for_record` for snapshots.

        Args:
            predicate: receives the records, oldest first.
            timeout: longest wait in seconds.

        Returns:
            Whether the predicate became true in time.
        """
        with self._cond:
            return self._cond.wait_for(lambda: predicate(builtins.list(self._records)), timeout)

    def wait_for_record(
        self, predicate: Callable[[RequestRecord], bool], timeout: float
    ) -> RequestRecord | None:
        """Block until some record satisfies ``predicate``; return a snapshot of it.

        The predicate sees live records under the lock, as in `wait_for`.

        Args:
            predicate: receives one record at a time.
            timeout: longest wait in seconds.

        Returns:
            A snapshot of the first (oldest) matching record, or ``None`` on timeout.
        """
        found: builtins.list[RequestRecord] = []

        def match(records: builtins.list[RequestRecord]) -> bool:
            for record in records:
                if predicate(record):
                    found.append(copy.copy(record))
                    return True
            return False

        return found[0] if self.wait_for(match, timeout) else None

    def clear(self) -> None:
        """Forget all records (ids keep increasing)."""
        with self._cond:
            self._records.clear()
            self._cond.notify_all()
