"""Characters per token of one session, measured from the server's own counts.

Every count the server gives for a request desk sent is a measurement: ``usage.prompt_tokens``
of a reply, the token list of llama.cpp's ``/tokenize``, the ``n_prompt_tokens`` of a
context-size 400. Each says how many characters that request had per token, once the template's
few tokens per message are taken off. The session's ratio is the characters-weighted mean of the
last few measurements, the newest weighing most (each older one half as much): the next request
is mostly the last one again, so the last measurement predicts it best.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agent.provider.types import ChatMessage
from agent.tokens import (
    DEFAULT_CHARS_PER_TOKEN,
    MESSAGE_OVERHEAD_TOKENS,
    RequestSize,
    message_chars,
    request_size,
)

_KEEP = 8
_DECAY = 0.5
_MIN_RATIO, _MAX_RATIO = 0.5, 12.0


class CountSource(StrEnum):
    """Where a server count came from."""

    USAGE = "usage"
    TOKENIZE = "tokenize"
    OVERFLOW = "overflow"


@dataclass(frozen=True, slots=True)
class Measurement:
    """One request's size and the server's count of it.

    Attributes:
        size: the request's characters and messages.
        tokens: the server's count (tokens).
        source: which answer gave the count.
    """

    size: RequestSize
    tokens: int
    source: CountSource

    @property
    def chars_per_token(self) -> float:
        """The measured ratio, the template's per-message tokens taken off."""
        text_tokens = max(1, self.tokens - MESSAGE_OVERHEAD_TOKENS * self.size.messages)
        return min(_MAX_RATIO, max(_MIN_RATIO, self.size.chars / text_tokens))


class TokenCalibration:
    """One session's characters-per-token ratio. Thread-safe.

    Args:
        default_chars_per_token: the ratio assumed before anything is measured.
    """

    def __init__(self, default_chars_per_token: float = DEFAULT_CHARS_PER_TOKEN) -> None:
        self._default = default_chars_per_token
        self._lock = threading.Lock()
        self._measured: deque[Measurement] = deque(maxlen=_KEEP)
        self._ratio = default_chars_per_token

    def observe(self, size: RequestSize, tokens: int, source: CountSource) -> None:
        """Take in the server's count of a request (ignored when it is not positive)."""
        if tokens <= 0 or size.chars <= 0:
            return
        with self._lock:
            self._measured.append(Measurement(size, tokens, source))
            chars = weight_tokens = 0.0
            weight = 1.0
            for item in reversed(self._measured):
                text_tokens = item.size.chars / item.chars_per_token
                chars += weight * item.size.chars
                weight_tokens += weight * text_tokens
                weight *= _DECAY
            self._ratio = chars / weight_tokens if weight_tokens else self._default

    @property
    def chars_per_token(self) -> float:
        """The ratio in use: measured, or the default."""
        with self._lock:
            return self._ratio

    @property
    def measured(self) -> bool:
        """True once the server has counted something for this session."""
        with self._lock:
            return bool(self._measured)

    @property
    def last(self) -> Measurement | None:
        """The newest measurement, if any."""
        with self._lock:
            return self._measured[-1] if self._measured else None

    def tokens(self, size: RequestSize) -> int:
        """The estimated tokens of a request of this size."""
        ratio = self.chars_per_token
        text = math.ceil(size.chars / ratio) if size.chars > 0 else 0
        return text + MESSAGE_OVERHEAD_TOKENS * size.messages

    def count(self, messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]] = ()) -> int:
        """The estimated tokens of the request sending ``messages`` with ``tools``."""
        return self.tokens(request_size(messages, tools))

    def costs(self, messages: Sequence[ChatMessage]) -> list[int]:
        """The estimated tokens of each message in a request, framing included (one pass)."""
        ratio, overhead, ceil = self.chars_per_token, MESSAGE_OVERHEAD_TOKENS, math.ceil
        chars = [len(m.content) for m in messages]
        for i, m in enumerate(messages):
            if m.tool_calls:  # rare: a second look only where there are calls
                chars[i] += sum([len(c.name) + len(c.arguments) for c in m.tool_calls])
        return [ceil(c / ratio) + overhead for c in chars]

    def message_tokens(self, message: ChatMessage) -> int:
        """The estimated tokens of one message in a request, framing included."""
        return self.tokens(RequestSize(message_chars(message), 1))
