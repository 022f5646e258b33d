"""Each session's context window and token count, and the ``context.window`` event.

The window is learned once per server and model (:func:`agent.provider.window.learn_context_window`:
a configured ``context_window`` wins, else the server's running window, else the model's
training context, else 8,192 assumed) and cached; each session gets a
:class:`agent.context.budget.ContextBudget` of its own (its calibration is per session). A new
session whose window is not known yet learns it on a gateway worker, so creating it never
waits on the server; the first turn waits for that answer if it has not come yet. A session
resumed with a history of its own and no count saved is published at the estimate first, then
counted by the server on a short-lived thread of its own and published again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Literal

from agent.context.budget import ContextBudget
from agent.context.calibration import CountSource, Measurement
from agent.context.shape import well_formed
from agent.context.tool_schemas import ToolSchemas
from agent.provider.client import ProviderConfig
from agent.provider.tokenize import ServerTokens
from agent.provider.types import ChatMessage
from agent.provider.window import ContextWindow, WindowSource, learn_context_window
from contract.events import ContextWindowKnown, Payload
from tui_gateway.sessions.state import Session
from tui_gateway.turns.server_counts import ServerCounts

Learn = Callable[[ProviderConfig, int | None], ContextWindow]

COUNT_JOIN_S = 1.0
"""How long :meth:`SessionWindows.close` waits for each thread whose count it cancelled, in
seconds (a cancelled count ends at once; a bound, not a wait)."""

log = logging.getLogger(__name__)

ServerCount = Callable[
    [ProviderConfig, Sequence[ChatMessage], Sequence[dict[str, Any]]], ServerTokens | None
]
"""The server's own count of a request (its messages and the tool definitions as sent),
template included; None when it counts nothing."""

MIN_SEED_CHARS = 400
"""Fewer characters of text than this in a new session's first request (no project
instructions, the tool definitions left out by the template) measure no ratio worth having: the
server counts `CALIBRATION_SAMPLE` instead."""

CALIBRATION_SAMPLE = (
    "A session keeps working as it grows because desk counts what each request carries. "
    "Before the server has answered a prompt, the count of characters to a token is a guess, "
    "and a guess made for one language or one vocabulary can be far from another's: a small "
    "model's tokenizer may cut plain English words into two or three pieces each, while a "
    "large one keeps most of them whole. So desk asks the server to count a short passage of "
    "ordinary prose like this one, with its numbers (42, 2048, 3.14) and its punctuation, "
    "and starts from that ratio until the first reply says how many tokens its prompt took."
)
"""Plain English prose for the server to count when a new session's first request holds too
little text (:data:`MIN_SEED_CHARS`)."""

OfferedTools = Callable[[], list[dict[str, Any]]]
"""The tool definitions a request offers now (the ``tools`` array's elements): the built-in
tools, ``delegate`` and the MCP servers' tools, whose list changes as servers come and go."""


def no_tools() -> list[dict[str, Any]]:
    """An :data:`OfferedTools` for a gateway that offers none."""
    return []


def _learn(provider: ProviderConfig, configured: int | None) -> ContextWindow:
    return learn_context_window(provider, configured=configured)


class SessionWindows:
    """Context windows by server and model, and the sessions' budgets. Thread-safe.

    Args:
        configured: the person's ``context_window`` (tokens), or None to learn it.
        publish: sends a payload for a session; never blocks.
        learn: finds the window of a provider (injectable for tests).
        tool_schemas: how the sessions' requests send tool definitions.
        count: the server's count of a request, asked for a session nothing has calibrated
            yet when the server answers (None: never asked; ``"server"``: the server's own,
            :class:`~tui_gateway.turns.server_counts.ServerCounts`, ended by :meth:`close`).
        first: a new session's first messages (its system message), whose request the
            server counts when it answers, for the sessions made after.

    A session's count is calibrated by the server's own counts (:mod:`agent.context.
    calibration`). So that its first figure is not an estimate of another kind than the
    later ones: a new session starts from the last server count of a session on the same
    server and model, and when the server answers, a session nothing has calibrated yet has
    its next request (before its prompt) counted by the server.
    """

    def __init__(
        self,
        configured: int | None,
        publish: Callable[[Session, Payload], None],
        *,
        learn: Learn = _learn,
        tool_schemas: ToolSchemas = ToolSchemas.AUTO,
        count: ServerCount | None | Literal["server"] = "server",
        first: Callable[[], list[ChatMessage]] = list,
    ) -> None:
        self._first = first
        self._configured = configured
        self._counts = ServerCounts() if count == "server" else None
        self._count: ServerCount | None = self._counts if count == "server" else count
        self._seeds: dict[tuple[str, str], Measurement] = {}  # the last server count per key
        self._rendered: dict[tuple[str, str], bool] = {}  # whose template renders the tools
        # key -> the sessions announced while the server counts a first request on it
        self._seeding: dict[
            tuple[str, str], list[tuple[Session, ProviderConfig, list[dict[str, Any]]]]
        ] = {}
        self._tool_schemas = tool_schemas
        self._publish = publish
        self._learn = learn
        self._lock = threading.Lock()
        self._known: dict[tuple[str, str], ContextWindow] = {}
        self._learning: dict[tuple[str, str], threading.Lock] = {}
        self._keys: dict[str, tuple[str, str]] = {}
        self._announced: set[str] = set()
        self._closed = False
        self._counting: set[threading.Thread] = set()  # resumed sessions' counts (see announce)

    def close(self) -> None:
        """End the server counts in flight and ask none from now on (the gateway shuts down:
        its quit never waits for a count); the threads that asked them end with them (joined
        up to :data:`COUNT_JOIN_S`). Idempotent."""
        with self._lock:
            self._closed = True
            counting = list(self._counting)
        if self._counts is not None:
            self._counts.close()
        for thread in counting:
            thread.join(COUNT_JOIN_S)

    def window(self, provider: ProviderConfig) -> ContextWindow:
        """The window for ``provider``'s server and model (learned once, then cached)."""
        key = (provider.base_url, provider.model)
        with self._lock:
            found = self._known.get(key)
            if found is not None:
                return found
            gate = self._learning.setdefault(key, threading.Lock())
        with gate:  # one question to the server per key, however many ask at once
            with self._lock:
                found = self._known.get(key)
            if found is None:
                found = self._learn(provider, self._configured)
                with self._lock:
                    self._known[key] = found
            return found

    def known(self, provider: ProviderConfig) -> ContextWindow | None:
        """The window for ``provider`` if it was learned already, else None (never asks)."""
        with self._lock:
            return self._known.get((provider.base_url, provider.model))

    def budget(self, session: Session, provider: ProviderConfig) -> ContextBudget:
        """The session's budget, its window the one of ``provider`` (the session's model)."""
        window = self.window(provider)
        key = (provider.base_url, provider.model)
        with session.lock:
            before = self._keys.get(session.session_id)
            self._keys[session.session_id] = key
            if session.context is None or (before is not None and before != key):
                # a new session, or another model: its own window and its own tokenizer,
                # calibrated from the last count on this server and model, if any; not a
                # session with a history of its own (resumed with no count saved): a first
                # request's count (the system prompt and the tools' JSON, 7.5 characters a
                # token against prose's 5) put its gauge a third low, and its compression
                # kept too much
                session.context = ContextBudget(window, tool_schemas=self._tool_schemas)
                with self._lock:
                    seed = self._seeds.get(key)
                if seed is not None and all(m.role == "system" for m in session.history):
                    session.context.observe(seed.size, seed.tokens, seed.source)
            elif before is None:
                # a resumed session, calibrated from its saved counts: the window is now known
                session.context.tool_schemas = self._tool_schemas
                session.context.set_window(window)
            if session.context.tools_rendered is None:  # a new budget, or the first count came
                with self._lock:
                    session.context.tools_rendered = self._rendered.get(key)
            return session.context

    def announce(
        self,
        session: Session,
        provider: ProviderConfig,
        tools: Sequence[dict[str, Any]] = (),
    ) -> None:
        """Publish ``context.window`` for a new or resumed session when its window is known
        already (right after the server's count of a first request, when that is being
        taken); otherwise its first turn learns it and publishes it (`first_turn`)."""
        if self.known(provider) is None:
            return
        with self._lock:
            waiting = self._seeding.get((provider.base_url, provider.model))
            if waiting is not None:
                waiting.append((session, provider, list(tools)))
                return
        self.publish(session, provider, tools)
        self._count_later(session, provider, tools)

    def _count_later(
        self, session: Session, provider: ProviderConfig, tools: Sequence[dict[str, Any]]
    ) -> None:
        """A session with a history of its own that nothing calibrated (resumed with no
        server count saved): the server counts its next request on a thread of its own (a
        resume never waits for the server), and its figure is published again."""
        if self._count is None or self.budget(session, provider).calibration.measured:
            return
        with session.lock:
            if all(m.role == "system" for m in session.history):
                return  # a new session: the first request's count calibrates it

        def count() -> None:
            try:
                self._counted(session, provider, tools)
                if self.budget(session, provider).calibration.measured:
                    self.publish(session, provider, tools)
            except Exception as exc:  # the estimate stands; the first turn calibrates it
                log.warning("counting session %s failed: %r", session.session_id, exc)
            finally:
                with self._lock:
                    self._counting.discard(threading.current_thread())

        thread = threading.Thread(target=count, name="desk-count", daemon=True)
        with self._lock:
            if self._closed:
                return
            self._counting.add(thread)
        thread.start()

    def first_turn(
        self,
        session: Session,
        provider: ProviderConfig,
        tools: Sequence[dict[str, Any]] = (),
    ) -> ContextBudget:
        """The session's budget for a turn about to run, published if it never was."""
        budget = self.budget(session, provider)
        with self._lock:
            first = session.session_id not in self._announced
        if first:
            self.publish(session, provider, tools)
        return budget

    def publish(
        self,
        session: Session,
        provider: ProviderConfig,
        tools: Sequence[dict[str, Any]] = (),
        *,
        after_turn: str = "",
    ) -> None:
        """Publish the session's ``context.window`` as it stands (learns the window if needed);
        ``after_turn``: the turn that just ended, now in the count ("" for none)."""
        self.publish_budget(session, self.budget(session, provider), tools, after_turn=after_turn)

    def count_request(
        self,
        provider: ProviderConfig,
        messages: Sequence[ChatMessage],
        tools: Sequence[dict[str, Any]],
    ) -> int | None:
        """The server's count of a request of ``messages`` sending ``tools`` (as given), in
        tokens, template included; None when it counts nothing or no count is asked of it.
        Blocks up to a few seconds (:data:`~tui_gateway.turns.server_counts.COUNT_TIMEOUT_S` a
        request); never raises."""
        if self._count is None or not messages:
            return None
        counted = self._count(provider, messages, tools)
        return counted.tokens if counted is not None else None

    def relearn(self, base_url: str) -> None:
        """Forget the windows of ``base_url`` that were only assumed (learned while the server
        could not be reached): sessions on them learn theirs again, keeping their counts."""
        with self._lock:
            stale = {
                k
                for k, w in self._known.items()
                if k[0] == base_url and w.source == WindowSource.ASSUMED
            }
            for key in stale:
                del self._known[key]
            for session_id, key in list(self._keys.items()):
                if key in stale:
                    del self._keys[session_id]  # the next budget() sets the learned window

    def server_answers(
        self,
        provider: ProviderConfig,
        sessions: Sequence[Session],
        tools: Sequence[dict[str, Any]] = (),
        *,
        listed: Callable[[str], bool] = lambda _model: True,
    ) -> None:
        """The server answers now (after it had not): sessions without a model take the one
        it names, and each session's window is learned (again) and published, but for a
        model the server does not list: nothing is counted for it (no window of a model the
        server does not run), until ``/model`` names one it does.

        Args:
            provider: the server, with the model new sessions use.
            sessions: the live sessions.
            tools: the tool definitions a request offers now.
            listed: whether the server lists a model (it answered listing none: all are).
        """
        self.relearn(provider.base_url)
        if provider.model:
            seeding = self._seed_begins(provider)
            try:
                self.window(provider)  # a session made from now on announces it at once
            finally:
                if seeding:
                    self._seed(provider, tools)
        for session in sessions:
            with session.lock:
                session.model = session.model or provider.model
                model = session.model
            if model and listed(model):
                ask = replace(provider, model=model)
                self._counted(session, ask, tools)
                self.publish(session, ask, tools)

    def _seed_begins(self, provider: ProviderConfig) -> bool:
        """True when the server is to count a new session's first request (:meth:`_seed`):
        no count on this server and model is known yet. Sessions made meanwhile are
        announced after it."""
        key = (provider.base_url, provider.model)
        with self._lock:
            if self._count is None or key in self._seeds or key in self._seeding:
                return False
            self._seeding[key] = []
            return True

    def _seed(self, provider: ProviderConfig, tools: Sequence[dict[str, Any]]) -> None:
        """Have the server count a new session's first request (no prompt yet): the
        sessions made after start from it; then announce those made meanwhile."""
        key = (provider.base_url, provider.model)
        try:
            request = well_formed(self._first())
            window = self.window(provider)
            sent = ContextBudget(window, tool_schemas=self._tool_schemas).offered(tools)
            assert self._count is not None
            counted = self._count(provider, request, sent) if request or sent else None
            seed = None
            if counted is not None and counted.tokens > 0:
                seed = Measurement(
                    counted.size(request, sent), counted.tokens, CountSource.TOKENIZE
                )
                with self._lock:
                    if counted.exact and sent:
                        self._rendered[key] = not counted.tools_left_out
            if seed is None or seed.size.chars < MIN_SEED_CHARS:
                seed = self._sample(provider) or seed  # too little text to measure a ratio by
            if seed is not None:
                with self._lock:
                    self._seeds.setdefault(key, seed)
        finally:
            with self._lock:
                waiting = self._seeding.pop(key, [])
            for session, asked, offered in waiting:
                self.publish(session, asked, offered)

    def _sample(self, provider: ProviderConfig) -> Measurement | None:
        """The server's count of `CALIBRATION_SAMPLE` as a request of its own (None when it
        counts nothing): a ratio for prose where the first request has too little text."""
        assert self._count is not None
        request = [ChatMessage("user", CALIBRATION_SAMPLE)]
        counted = self._count(provider, request, ())
        if counted is None or counted.tokens <= 0:
            return None
        return Measurement(counted.size(request, ()), counted.tokens, CountSource.TOKENIZE)

    def _counted(
        self, session: Session, provider: ProviderConfig, tools: Sequence[dict[str, Any]]
    ) -> None:
        """Have the server count the session's next request when nothing calibrated it."""
        budget = self.budget(session, provider)
        if self._count is None or budget.calibration.measured:
            return
        with session.lock:
            request = well_formed(list(session.history))
        if not request:
            return
        sent = budget.offered(tools)
        counted = self._count(provider, request, sent)
        if counted is not None and counted.tokens > 0:
            if counted.exact and sent:
                budget.tools_rendered = not counted.tools_left_out
            budget.observe(counted.size(request, sent), counted.tokens, CountSource.TOKENIZE)

    def publish_budget(
        self,
        session: Session,
        budget: ContextBudget,
        tools: Sequence[dict[str, Any]] = (),
        *,
        after_turn: str = "",
    ) -> None:
        """Publish ``context.window`` from the session's budget as it stands (``after_turn``:
        see :attr:`contract.events.ContextWindowKnown.after_turn`)."""
        with self._lock:
            self._announced.add(session.session_id)
        with session.lock:
            history = list(session.history)
        window = budget.window
        calibration = budget.calibration
        used = budget.count(well_formed(history), tools)
        last = calibration.last
        if last is not None:
            with self._lock:
                key = self._keys.get(session.session_id)
                if key is not None:
                    self._seeds[key] = last
        self._publish(
            session,
            ContextWindowKnown(
                tokens=window.tokens,
                source=window.source.value,
                detail=window.detail,
                text=window.describe(),
                used_tokens=used,
                chars_per_token=round(calibration.chars_per_token, 3),
                measured=calibration.measured,
                after_turn=after_turn,
            ),
        )
