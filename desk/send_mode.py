"""How a prompt the prompt box took is to go, and the key of a queued prompt the box edits
before the desk named it."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["LAST_QUEUED", "SendMode"]

LAST_QUEUED = "\x00last-queued"
"""The key the box edits while it shows the prompt it queued last and the desk has not named
it yet (Up in the same burst as that prompt's Enter)."""


class SendMode(StrEnum):
    """How the text of a :class:`PromptInput.Submitted` is to go."""

    SEND = "send"
    """Nothing runs: the next turn."""
    QUEUE = "queue"
    """A turn runs: wait behind it."""
    STEER = "steer"
    """A turn runs: give it the text at its next model-call boundary."""
    STOP_AND_SEND = "stop and send"
    """A turn runs: stop it (as the person) and run the text at once."""
    EDIT = "edit"
    """The box edits a queued prompt: its new text, in its place."""
