"""One session's context budget: the window, the calibrated count, and whether a request fits.

A request fits when its prompt (by the session's calibrated count), a headroom for the count's
error, and the room kept for the reply are all inside the window. The headroom is 3 % of the
prompt plus 8 tokens once the server has counted something for the session, 15 % plus 16
before. The reply keeps at least an eighth of the window, at most 1,024 tokens (at least 64);
``max_tokens`` is then set to what is left, so that the reply cannot run past the window
(left unset when more than 4,096 tokens are left and nothing else caps it: some servers refuse
a ``max_tokens`` above the model's own output limit).

A conversation the server has just counted is not estimated again: a reply's ``usage`` says
how many tokens its request and the reply itself took (prompt plus completion tokens), which is
the context the next request carries before what was added since. A request that starts with
that request and that reply (and sends the same tool definitions) counts at least those tokens
as the server said, and what follows by the calibrated ratio: a long reply in a vocabulary with
fewer characters a token than the prompt (code, another language, a small model's) is counted
whole, not at the prompt's ratio (the estimate of the whole request stands when it says more).
A compression, or anything else that rewrites what stands before, falls back to the
estimate.

Near the edge the server's own count replaces the estimate (llama.cpp's ``/apply-template``
and ``/tokenize``, :mod:`agent.provider.tokenize`): an exact count needs no headroom, and the
request fits when what is left for the reply is at least a minimum reply (a sixteenth of the
window, 64 to 512 tokens); ``max_tokens`` is then what is left.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent.context.calibration import CountSource, TokenCalibration
from agent.context.tool_schemas import COMPACT_SHARE, ToolSchemas, compact_tools
from agent.provider.types import ChatMessage
from agent.provider.window import ContextWindow, WindowSource
from agent.tokens import RequestSize, request_size, tokens_in_chars, tools_chars

MAX_REPLY_RESERVE = 1024
"""Most tokens kept for the reply (an eighth of the window below 8,192)."""

MIN_REPLY_RESERVE = 64
"""Fewest tokens kept for the reply."""

MIN_EXACT_REPLY = 64
"""Fewest tokens a reply may have when the prompt's count is exact."""

MAX_EXACT_REPLY = 512
"""Most tokens the minimum reply of an exactly counted prompt asks for."""

UNCAPPED_ROOM = 4096
"""With more room than this for the reply, ``max_tokens`` is left to the server."""


@dataclass(frozen=True, slots=True)
class RequestFit:
    """Whether one request fits its window, with the figures.

    Attributes:
        prompt_tokens: the prompt by the calibrated count (tokens).
        headroom: tokens kept for the count's error.
        reserve: the least room the reply must have (tokens).
        window: the context window (tokens).
        max_tokens: the ``max_tokens`` to send (None: leave it to the server).
        measured: True when the count is calibrated by the server's own counts.
        exact: True when ``prompt_tokens`` is the server's own count of this very request.
    """

    prompt_tokens: int
    headroom: int
    reserve: int
    window: int
    max_tokens: int | None
    measured: bool
    exact: bool = False

    @property
    def fits(self) -> bool:
        """True when prompt, headroom and the reply's reserve are inside the window."""
        return self.prompt_tokens + self.headroom + self.reserve <= self.window

    @property
    def room(self) -> int:
        """Tokens left for the reply after the prompt and the headroom."""
        return self.window - self.prompt_tokens - self.headroom

    @property
    def over_by(self) -> int:
        """Tokens the prompt would have to lose to fit (0 when it fits)."""
        return max(0, self.prompt_tokens + self.headroom + self.reserve - self.window)


@dataclass(frozen=True, slots=True)
class CountedReply:
    """The server's count of a request and the reply it answered with.

    Attributes:
        request: the request's messages, as sent.
        tools: the tool definitions it sent.
        reply: the reply as the transcript keeps it (its text, its tool calls).
        tokens: the request's prompt tokens plus the reply's completion tokens, by the server
            (``usage``); a reply that also reasoned counts only its share of text and calls,
            since the reasoning is not sent again.
    """

    request: tuple[ChatMessage, ...]
    tools: tuple[dict[str, Any], ...]
    reply: ChatMessage
    tokens: int


@dataclass(frozen=True, slots=True)
class _Saved:
    """A saved server count waiting for the window (see `ContextBudget.observe_when_known`)."""

    messages: Sequence[ChatMessage]
    tools: Sequence[dict[str, Any]]
    tokens: int
    reply: ChatMessage | None
    reply_tokens: int


def reply_reserve(window: int) -> int:
    """The least room kept for a reply in a window of ``window`` tokens (an eighth of it,
    within `MIN_REPLY_RESERVE` and `MAX_REPLY_RESERVE`)."""
    return max(MIN_REPLY_RESERVE, min(MAX_REPLY_RESERVE, window // 8))


def minimum_reply(window: int) -> int:
    """The least room a reply must have when the prompt is counted exactly (a sixteenth of
    the window, within `MIN_EXACT_REPLY` and `MAX_EXACT_REPLY`)."""
    return max(MIN_EXACT_REPLY, min(MAX_EXACT_REPLY, window // 16))


def headroom(prompt_tokens: int, *, measured: bool) -> int:
    """Tokens kept for the error of a count of ``prompt_tokens``."""
    if measured:
        return math.ceil(prompt_tokens * 0.03) + 8
    return math.ceil(prompt_tokens * 0.15) + 16


def _cap(room: int, max_tokens: int | None) -> int | None:
    """The ``max_tokens`` to send with ``room`` tokens left for the reply."""
    if room < UNCAPPED_ROOM or max_tokens is not None:
        return max(1, min(room, max_tokens if max_tokens is not None else room))
    return None


def largest_prompt(window: int, *, measured: bool, reply_at_least: int = 0) -> int:
    """The largest prompt (tokens) that fits a window of ``window`` tokens with its headroom
    and the reply's reserve, or ``reply_at_least`` tokens of reply when that is more (0 when
    none does)."""
    share, fixed = (0.03, 8) if measured else (0.15, 16)
    reserve = max(reply_reserve(window), reply_at_least)
    prompt = max(0, int((window - reserve - fixed - 1) / (1 + share)))
    while prompt > 0 and prompt + headroom(prompt, measured=measured) + reserve > window:
        prompt -= 1
    return prompt


class ContextBudget:
    """A session's window and token calibration. Thread-safe.

    Args:
        window: the context window and where it came from.
        calibration: the session's calibration (a fresh one when None).
        tool_schemas: how tool definitions are sent (:mod:`agent.context.tool_schemas`).
    """

    def __init__(
        self,
        window: ContextWindow,
        calibration: TokenCalibration | None = None,
        *,
        tool_schemas: ToolSchemas = ToolSchemas.AUTO,
    ) -> None:
        self._lock = threading.Lock()
        self._window = window
        self.calibration = calibration if calibration is not None else TokenCalibration()
        self.tool_schemas = tool_schemas
        """How tool definitions are sent: whole, compact, or compact on a small window."""
        self.tokenize_supported: bool | None = None
        """Whether the server answers ``/tokenize`` (None: not tried yet)."""
        self.template_supported: bool | None = None
        """Whether the server answers ``/apply-template`` (None: not tried yet)."""
        self.tools_rendered: bool | None = None
        """Whether the server's chat template puts the tool definitions in the prompt (None:
        not known yet): False for llama.cpp without ``--jinja``, whose counts (and window)
        then hold none of them, so neither do this budget's counts and measurements."""
        self._saved: _Saved | None = None
        self._counted: CountedReply | None = None  # the last request the server counted whole

    def sharing(self) -> ContextBudget:
        """A budget for another transcript on the same server and model (a child agent's):
        the same window now, the same calibration (what either measures, both count with)
        and what the server was found to support; the last count of a request is its own."""
        other = ContextBudget(self.window, self.calibration, tool_schemas=self.tool_schemas)
        other.tokenize_supported = self.tokenize_supported
        other.template_supported = self.template_supported
        other.tools_rendered = self.tools_rendered
        return other

    @property
    def window(self) -> ContextWindow:
        """The window in use."""
        with self._lock:
            return self._window

    def set_window(self, window: ContextWindow) -> None:
        """Use another window from now on (e.g. the one a context-size 400 named); a saved
        count waiting for the window (:meth:`observe_when_known`) calibrates now."""
        with self._lock:
            self._window = window
            saved, self._saved = self._saved, None
        if saved is not None:
            sent = self.offered(saved.tools)
            self.observe_request(saved.messages, sent, saved.tokens, CountSource.USAGE)
            if saved.reply is not None:
                tokens = saved.tokens + saved.reply_tokens
                self.observe_reply(saved.messages, sent, saved.reply, tokens)

    def observe_when_known(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[dict[str, Any]],
        tokens: int,
        reply: ChatMessage | None = None,
        reply_tokens: int = 0,
    ) -> None:
        """A saved server count (``tokens``) of the request of ``messages`` offering ``tools``
        (whole, as the gateway offers them): it calibrates at the next :meth:`set_window`,
        when the window says whether the definitions went whole or compact. With the
        ``reply`` it was answered with (as the transcript keeps it) and that reply's
        ``reply_tokens``, both count as the server said (:meth:`observe_reply`)."""
        with self._lock:
            self._saved = _Saved(list(messages), list(tools), tokens, reply, reply_tokens)

    def learn_from_server(self, tokens: int, detail: str) -> None:
        """The server named its window refusing a request (a 400): from now on it is the
        window, even over a configured one (which was evidently wrong for this server)."""
        with self._lock:
            if tokens > 0 and tokens != self._window.tokens:
                self._window = ContextWindow(tokens, WindowSource.SERVER, detail)

    def offered(self, tools: Sequence[dict[str, Any]]) -> Sequence[dict[str, Any]]:
        """The tool definitions a request sends for ``tools`` in this window: whole, or
        compact (:mod:`agent.context.tool_schemas`). Every count of this budget counts these."""
        mode = self.tool_schemas
        if not tools or mode is ToolSchemas.FULL:
            return tools
        if mode is ToolSchemas.COMPACT:
            return compact_tools(tools)
        whole = tokens_in_chars(tools_chars(tools))  # the default ratio: the same every time
        return compact_tools(tools) if whole > COMPACT_SHARE * self.window.tokens else tools

    def counted_tools(self, sent: Sequence[dict[str, Any]]) -> Sequence[dict[str, Any]]:
        """Of the definitions a request sends, those its prompt holds: none when the
        server's template leaves them out (:attr:`tools_rendered`)."""
        return () if self.tools_rendered is False else sent

    def count(self, messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]] = ()) -> int:
        """The token count of a request (its tools as `offered` sends them, when the
        template renders them): by the calibrated ratio, or, when it is more, what the
        server counted of its start (:meth:`observe_reply`) plus the rest by that ratio."""
        sent = self.counted_tools(self.offered(tools))
        estimate = self.calibration.count(messages, sent)
        counted = self._counted_part(messages, sent)
        if counted is None:
            return estimate
        tokens, rest = counted
        return max(estimate, tokens + self.calibration.count(rest))

    def observe_reply(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[dict[str, Any]],
        reply: ChatMessage,
        tokens: int,
    ) -> None:
        """The server answered the request of ``messages`` and ``tools`` (the definitions as
        sent) with ``reply`` (as the transcript keeps it), and both took ``tokens`` of the
        window by its own count: a request that starts with them counts them so
        (:meth:`count`). Ignored when ``tokens`` is not positive."""
        if tokens <= 0:
            return
        counted = CountedReply(tuple(messages), tuple(self.counted_tools(tools)), reply, tokens)
        with self._lock:
            self._counted = counted

    def _counted_part(
        self, messages: Sequence[ChatMessage], sent: Sequence[dict[str, Any]]
    ) -> tuple[int, Sequence[ChatMessage]] | None:
        """The server's count of the start of a request, and the messages after it; None
        when the request does not start with the last counted request and its reply."""
        with self._lock:
            counted = self._counted
        if counted is None:
            return None
        n = len(counted.request)
        if len(messages) <= n or messages[n] != counted.reply:
            return None
        if tuple(sent) != counted.tools or tuple(messages[:n]) != counted.request:
            return None
        return counted.tokens, messages[n + 1 :]

    def fit_tokens(
        self, prompt_tokens: int, *, max_tokens: int | None = None, reply_at_least: int = 0
    ) -> RequestFit:
        """Whether a prompt of ``prompt_tokens`` fits, and the ``max_tokens`` to send.

        Args:
            prompt_tokens: the prompt by the calibrated count.
            max_tokens: the caller's own cap on the reply, if any.
            reply_at_least: the least room the reply must have (tokens), when more than the
                usual reserve (a summary call's budget).
        """
        window = self.window.tokens
        measured = self.calibration.measured
        spare = headroom(prompt_tokens, measured=measured)
        reserve = max(reply_reserve(window), reply_at_least)
        room = window - prompt_tokens - spare
        return RequestFit(prompt_tokens, spare, reserve, window, _cap(room, max_tokens), measured)

    def fit_exact(
        self, prompt_tokens: int, *, max_tokens: int | None = None, reply_at_least: int = 0
    ) -> RequestFit:
        """Whether a prompt the server counted at ``prompt_tokens`` fits: no headroom, and
        at least `minimum_reply` (or ``reply_at_least``, when more) left for the reply,
        ``max_tokens`` what is left.

        Args:
            prompt_tokens: the server's own count of the request (template included).
            max_tokens: the caller's own cap on the reply, if any.
            reply_at_least: the least room the reply must have (tokens).
        """
        window = self.window.tokens
        room = window - prompt_tokens
        reserve = max(minimum_reply(window), reply_at_least)
        cap = _cap(room, max_tokens)
        return RequestFit(prompt_tokens, 0, reserve, window, cap, True, exact=True)

    def fit(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[dict[str, Any]] = (),
        *,
        max_tokens: int | None = None,
        reply_at_least: int = 0,
    ) -> RequestFit:
        """Whether the request sending ``messages`` with ``tools`` fits (see `fit_tokens`)."""
        size = self.count(messages, tools)
        return self.fit_tokens(size, max_tokens=max_tokens, reply_at_least=reply_at_least)

    def observe(self, size: RequestSize, tokens: int, source: CountSource) -> None:
        """The server counted ``tokens`` for a request of ``size``: calibrate."""
        self.calibration.observe(size, tokens, source)

    def observe_request(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[dict[str, Any]],
        tokens: int,
        source: CountSource,
    ) -> None:
        """The server counted ``tokens`` for the request of ``messages`` and ``tools`` (the
        definitions as they were sent; left out when the template does not render them)."""
        self.observe(request_size(messages, self.counted_tools(tools)), tokens, source)
