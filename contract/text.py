"""Text rules a frontend shares with the gateway: terminal-safe text, the token estimate, and
how the line of a prompt that was never sent begins.

Both are the agent's own rules, offered here so that a frontend speaks to the gateway's layer
only (desk imports nothing of ``agent`` but the stop vocabulary, :mod:`agent.stops`):

- :func:`terminal_safe` (:mod:`agent.terminal_text`): text from outside (a reply, a tool's
  output, a title, an error) with every control character made visible, before it is shown;
- :func:`tokens_in_chars` (:mod:`agent.tokens`): the estimate of tokens from characters, at
  :data:`DEFAULT_CHARS_PER_TOKEN` (3, on the safe side) or at a session's measured ratio (its
  ``context.window`` says it), for what a frontend must estimate itself (the prompt being
  typed, a resumed transcript before the gateway has counted it);
- :data:`NOT_SENT_PREFIX` (:mod:`agent.outcome`): how the error of a turn whose prompt was
  never sent begins (``message.complete``'s ``error``, e.g. a prompt too large for the window).
"""

from __future__ import annotations

from agent.outcome import NOT_SENT_PREFIX as NOT_SENT_PREFIX
from agent.terminal_text import terminal_safe as terminal_safe
from agent.tokens import DEFAULT_CHARS_PER_TOKEN as DEFAULT_CHARS_PER_TOKEN
from agent.tokens import tokens_in_chars as tokens_in_chars
