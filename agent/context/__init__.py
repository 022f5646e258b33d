"""The context window, managed: counting, well-formed requests, and fitting them in.

- :mod:`agent.context.calibration`: characters per token of one session, measured from the
  server's own counts.
- :mod:`agent.context.budget`: the window and its calibration; whether a request fits, and the
  ``max_tokens`` that keeps its reply inside the window.
- :mod:`agent.context.shape`: the request a transcript becomes (never a prompt that was not
  sent, no two user messages in a row, every tool call paired with its result).
- :mod:`agent.context.shrink`: making large messages smaller without a model (tool outputs cut
  to a head and a tail).
"""
