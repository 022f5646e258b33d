"""Checkpoints: what files held before a turn changed them, so the turn can be undone.

:mod:`~agent.checkpoints.snapshot` takes a workspace's files before a shell command and tells
what the command changed; :mod:`~agent.checkpoints.recorder` records, for one turn, what each
file held before the turn's first change to it; :mod:`~agent.checkpoints.undo` puts a turn's
files back and computes the session's diff; :mod:`~agent.checkpoints.diff` renders diffs.
"""
