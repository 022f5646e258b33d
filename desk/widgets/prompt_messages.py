"""The messages the prompt box posts (:class:`desk.widgets.prompt_input.PromptInput`, which
names them ``PromptInput.Submitted``, ``PromptInput.EditLast`` and ``PromptInput.EditCancelled``;
handled as ``on_prompt_input_submitted`` and so on)."""

from __future__ import annotations

from textual.message import Message

from desk.send_mode import SendMode

__all__ = ["EditCancelled", "EditLast", "Submitted"]


class Submitted(Message, namespace="prompt_input"):
    """The person pressed Enter (or Ctrl+T, Ctrl+S).

    Args:
        text: the prompt box's text when the key was handled (the box is empty since).
        how: how it is to go.
        key_time: when the key that sent it was made (``Message.time``), or None when no
            key sent it.
        editing: with :attr:`SendMode.EDIT`, the queued prompt the box was editing.
        in_flight: a send key given to the box posted it (counted until the screen is
            done with it).
        starts_turn: a prompt that may start a turn (not a ``/command``): the box counts
            as busy until the screen is done with it (``PromptInput.handled``).
    """

    def __init__(
        self,
        text: str,
        how: SendMode = SendMode.SEND,
        key_time: float | None = None,
        editing: str | None = None,
        *,
        in_flight: bool = False,
        starts_turn: bool = False,
    ) -> None:
        super().__init__()
        self.text = text
        """The prompt box's text."""
        self.how = how
        """How it is to go (see :class:`SendMode`)."""
        self.key_time = key_time
        """When the key was made, or None."""
        self.editing = editing
        """The queued prompt an edit is for, or None."""
        self.in_flight = in_flight
        """True until the screen counts its send key done (:mod:`desk.sends_in_flight`)."""
        self.starts_turn = starts_turn
        """True until the screen tells the box it is done with it (see ``handled``)."""


class EditLast(Message, namespace="prompt_input"):
    """Up on an empty box while prompts wait in the queue: edit the last of them.

    Args:
        loaded: the box already shows the prompt it queued last (Up came before the desk
            had listed it): its key is :data:`~desk.send_mode.LAST_QUEUED` until the desk names it.
    """

    def __init__(self, loaded: bool = False) -> None:
        super().__init__()
        self.loaded = loaded
        """The box shows the text already: only the prompt's key is to be set."""


class EditCancelled(Message, namespace="prompt_input"):
    """The box was emptied while it edited a queued prompt: the edit is given up.

    Args:
        key: the queued prompt it edited.
    """

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key
        """The queued prompt it edited."""
