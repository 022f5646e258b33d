"""Turns: a prompt made a turn, run on a worker inside its window, its approvals and children.

- :mod:`~tui_gateway.turns.turn_runner`: the turn runner: makes turns, queues them, and runs prompt
  and compress turns on workers.
- :mod:`~tui_gateway.turns.kinds`: the gateway's closed types for turns (their values are the
  wire's words, unchanged).
- :mod:`~tui_gateway.turns.workers`: the gateway's own executor: one named thread per turn,
  bounded, joinable.
- :mod:`~tui_gateway.turns.translate`: agent events of one turn -> gateway event payloads (and the
  turn's visible state).
- :mod:`~tui_gateway.turns.fitted_turns`: turns kept inside their session's context window.
- :mod:`~tui_gateway.turns.compression`: compression inside a session's worker: ``/compress`` turns
  and the automatic trigger.
- :mod:`~tui_gateway.turns.context_window`: each session's context window and token count, and the
  ``context.window`` event.
- :mod:`~tui_gateway.turns.tool_offer`: the tools every turn's agent is offered, and their
  definitions as a request carries them.
- :mod:`~tui_gateway.turns.approvals`: approval prompts: a tool call that needs the person's yes
  waits on a future of its turn.
- :mod:`~tui_gateway.turns.approval_preview`: what an approval prompt shows will change: a
  ``write_file`` call's diff against the file on disk.
- :mod:`~tui_gateway.turns.edit_preview`: what an ``edit_file`` or ``apply_patch`` call will
  change, for its approval prompt.
- :mod:`~tui_gateway.turns.delegation`: child agents: the host of the ``delegate`` tool, one worker
  per child, and every stop reaches.
- :mod:`~tui_gateway.turns.child_outcome`: what a child agent's outcome says: to its parent (the
  tool result, the steer's text) and to the frontends (``child.complete``).

Nothing is imported here: importing one module of the package loads what that module needs.
"""
