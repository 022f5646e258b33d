"""The status bar's context gauge: how full the context window is, and whose figure it is.

The figure is the gateway's, always the same count: what the session's next request carries
before its prompt (the system prompt, the transcript and the tool definitions as they are
sent), by the session's calibrated count: the very count automatic compression compares with
its threshold. The gateway sends it in ``context.window`` (with the window and where it came
from: ``window 2,048 from the server``, ``8,192 assumed: set context_window``) as soon as the
window is known, and again after every turn, stop and compression. The gauge keeps the last
one of each session, shown or not: a session shown again (``/new``, a resume, a switch) shows
its own count at once, never an estimate of another kind; until the gateway has counted a
session the gauge shows none (``ctx –``), and likewise while the server does not list the
session's model (after ``/server`` to a server that lists others, or a switch to a session
made for another model): a figure for a model the server does not run would be a guess, and
a window of another model's. Before the gateway's first count, what is used
comes from each finished turn as the server counted it, or is estimated with the gateway's
own rule (:func:`contract.text.tokens_in_chars`). Either way the prompt being typed and the
queued ones count too: they are what is sent next.

While a turn runs, its prompt and the reply it streamed so far count too (estimated): the
gateway's count leaves them out until the turn ends, and the next request carries them. The
count the gateway takes at the turn's end (``after_turn`` names it) includes them: from then
on they are not added again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import TextArea

from agent.usage import TokenUsage
from contract.events import ChildCompleted, ContextWindowKnown, MessageComplete, MessageDelta
from contract.text import DEFAULT_CHARS_PER_TOKEN, tokens_in_chars
from desk.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from desk.controllers.view import ShownSession


class ContextGauge:
    """Keeps the status bar's ``context_window``, ``context_used``, ``context_pending`` and
    ``window_note``.

    Args:
        status: the status bar.
        prompt: the prompt box (what is typed there counts), or None.
    """

    def __init__(self, status: StatusBar, prompt: TextArea | None = None) -> None:
        self._status = status
        self._prompt = prompt
        self._chars_per_token = DEFAULT_CHARS_PER_TOKEN
        self._counts: dict[str, ContextWindowKnown] = {}  # session id -> its last count
        self._streamed: tuple[str, int] = ("", 0)  # the running turn, its reply's characters
        self._counted_turn = ""  # the last turn whose end the gateway's count includes
        self._listed = True  # the server lists the shown session's model (or did not say)

    @property
    def _counted(self) -> bool:
        """True once the gateway's ``context.window`` came: its figures are the ones shown."""
        return bool(self._status.window_note)

    def window_reported(self, view: ShownSession, payload: ContextWindowKnown) -> None:
        """``context.window`` of the session shown: the gateway's window, its source, and the
        next request's size."""
        self._counts[view.session_id] = payload
        if payload.after_turn:
            self._counted_turn = payload.after_turn
        if self._listed:
            self._show(payload)
        self.count_pending(view)

    def model_listed(self, listed: bool, view: ShownSession | None) -> None:
        """Whether the server lists the shown session's model: when it does not, the gauge
        shows none (``ctx –``) until it does again; then the session's last count shows."""
        if listed == self._listed:
            return
        self._listed = listed
        known = self._counts.get(view.session_id) if view is not None else None
        if listed and known is not None:
            self._show(known)
        else:
            self._show_none()

    def window_unshown(
        self, session_id: str, payload: ContextWindowKnown, shown: ShownSession | None
    ) -> None:
        """``context.window`` of a session no view took: kept for when it is shown (shown
        at once when it is the session on screen now: the view was replaced meanwhile)."""
        if shown is not None and shown.session_id == session_id:
            self.window_reported(shown, payload)
        else:
            self._counts[session_id] = payload

    def _show(self, payload: ContextWindowKnown) -> None:
        status = self._status
        self._chars_per_token = payload.chars_per_token or DEFAULT_CHARS_PER_TOKEN
        status.window_note = payload.text
        status.context_window = payload.tokens
        status.context_used = payload.used_tokens

    def count_pending(self, view: ShownSession | None) -> None:
        """Count the prompt being typed and the view's queued prompts (sent next), and the
        running turn's prompt and reply so far until the gateway's count includes them."""
        chars = len(self._prompt.text) if self._prompt is not None else 0
        if view is not None:
            chars += view.queue.pending_chars() + self._running_chars(view)
        self._status.context_pending = tokens_in_chars(chars, self._chars_per_token)

    def _running_chars(self, view: ShownSession) -> int:
        """Characters of the view's running turn the gateway's count leaves out: its prompt
        and the reply it streamed so far (0 once its end was counted)."""
        turn = view.running_turn
        if turn is None or turn == self._counted_turn:
            return 0
        prompt = view.transcript.prompt(turn)
        streamed_turn, streamed = self._streamed
        return (len(prompt.text) if prompt is not None else 0) + (
            streamed if streamed_turn == turn else 0
        )

    def streamed(self, view: ShownSession, payload: MessageDelta) -> None:
        """``message.delta`` of the view's running turn: its reply so far counts."""
        if not payload.text or payload.turn_id != view.running_turn:
            return
        turn, chars = self._streamed
        chars = chars + len(payload.text) if turn == payload.turn_id else len(payload.text)
        self._streamed = (payload.turn_id, chars)
        self.count_pending(view)

    def child_completed(self, view: ShownSession, payload: ChildCompleted) -> None:
        """``child.complete`` of the view's session: the session's usage with the child's
        (a background child that outlived its turn adds to it after the turn's end)."""
        if payload.session_usage is not None:
            view.usage = payload.session_usage
            self._status.usage = payload.session_usage

    def reset(self, session_id: str, usage: TokenUsage | None = None) -> None:
        """Another session is shown: its last count from the gateway, or none until the
        gateway counts it (``ctx –``); ``usage`` is its requests summed (None: none yet)."""
        status = self._status
        status.usage = usage
        known = self._counts.get(session_id)
        if known is not None and self._listed:
            self._show(known)
            return
        self._show_none()

    def _show_none(self) -> None:
        """No count (``ctx –``): none of the gateway's yet, or a model the server lacks."""
        status = self._status
        self._chars_per_token = DEFAULT_CHARS_PER_TOKEN
        status.window_note = ""
        status.context_window = None  # not the last session's: its window may be another
        status.context_used = None

    def turn_completed(self, view: ShownSession, payload: MessageComplete) -> None:
        """A turn of the view's session ended: what the next request will carry."""
        status = self._status
        if self._streamed[0] == payload.turn_id:
            self._streamed = ("", 0)
        if payload.session_usage is not None:
            view.usage = payload.session_usage
            status.usage = payload.session_usage
        if self._counted or not self._listed:
            return  # the gateway's context.window, just before, counted the next request
        if payload.prompt_tokens is not None:
            status.context_used = payload.prompt_tokens + (payload.completion_tokens or 0)
        elif status.context_used is not None or payload.text:
            # A stopped or failed turn: the server sent no count, but the prompt and the partial
            # reply are in the context now all the same (estimated).
            prompt = view.transcript.prompt(payload.turn_id)
            added = (len(prompt.text) if prompt is not None else 0) + len(payload.text)
            status.context_used = (status.context_used or 0) + tokens_in_chars(added)

    def compressed(self, before_tokens: int, after_tokens: int) -> None:
        """A compression committed: take off what it saved."""
        status = self._status
        if self._counted or not self._listed:
            return  # the gateway's context.window, just before, counted what is left
        saved = max(0, before_tokens - after_tokens)
        # The gauge holds the server's count when it has one: take off what was saved
        # (estimated) rather than replace it by an estimate of another kind.
        used = status.context_used
        status.context_used = after_tokens if used is None else max(0, used - saved)
