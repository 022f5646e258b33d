"""Text rules a frontend shares with the gateway: terminal-safe text, and the token estimate.

Both are the agent's own rules, offered here so that a frontend speaks to the gateway's layer
only (desk imports nothing of ``agent`` but the stop vocabulary, :mod:`agent.stops`):

- :func:`terminal_safe` (:mod:`agent.terminal_text`): text from outside (a reply, a tool's
  output, a title, an error) with every control character made visible, before it is shown;
- :func:`tokens_in_chars` (:mod:`agent.tokens`): the 4-characters-a-token estimate the store and
  compression use, for what a frontend must estimate itself (a stopped turn the server sent no
  count for, a resumed transcript).
"""

from __future__ import annotations

from agent.terminal_text import terminal_safe as terminal_safe
from agent.tokens import tokens_in_chars as tokens_in_chars
