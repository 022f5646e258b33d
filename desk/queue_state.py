"""The prompts waiting in one session's queue, in order, as the desk shows them.

The gateway owns the queue; this is the desk's copy, kept from what the gateway answers
(``prompt.submit`` says a prompt was queued) and what it announces (``prompt.queued`` with the
text and place, again after an edit; ``message.start`` as one runs; ``prompt.dropped``), and
filled from ``session.queue`` when a session is shown. Beside the queue it keeps the prompts
that were still waiting when the desk last closed (saved as not sent): they are offered again,
and run only if the person sends them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

QueueKind = Literal["prompt", "compress", "held"]
"""A queued prompt, a queued ``/compress``, or a prompt not sent when the desk last closed."""


@dataclass(slots=True)
class QueueEntry:
    """One line of the queue.

    Attributes:
        key: the queued turn's id, or ``held-N`` for a prompt offered again.
        text: the prompt (``/compress ...`` for a compression).
        kind: see :data:`QueueKind`.
        turn_ids: for a prompt offered again, the turn ids of the prompts saved as not sent
            that it stands for (one line per text).
    """

    key: str
    text: str
    kind: QueueKind = "prompt"
    turn_ids: tuple[str, ...] = ()

    @property
    def editable(self) -> bool:
        """A prompt's text can be changed (a compression's cannot)."""
        return self.kind != "compress"


class SessionQueue:
    """The queue of one session, in the order its prompts will run, then the held ones."""

    def __init__(self) -> None:
        self._queued: list[QueueEntry] = []
        self._held: list[QueueEntry] = []
        self._held_count = 0

    @property
    def entries(self) -> list[QueueEntry]:
        """Every line: the queue in order (#1 runs next), then the held prompts."""
        return [*self._queued, *self._held]

    @property
    def queued(self) -> list[QueueEntry]:
        """The prompts the gateway will run, in order."""
        return list(self._queued)

    def __len__(self) -> int:
        """How many prompts the gateway will run (the held ones do not count)."""
        return len(self._queued)

    def get(self, key: str) -> QueueEntry | None:
        """The line of ``key``, if shown."""
        return next((e for e in self.entries if e.key == key), None)

    def position(self, key: str) -> int:
        """The place of a queued prompt (1 runs next), 0 when it is not queued."""
        return next((i for i, e in enumerate(self._queued, start=1) if e.key == key), 0)

    def add(
        self, key: str, text: str, position: int | None = None, *, compress: bool = False
    ) -> None:
        """A prompt waits in the queue (or waits with a new text, after an edit).

        Args:
            key: its turn id.
            text: its text.
            position: its place (1 = next) as the gateway said, or None for the end.
            compress: it is a ``/compress``.
        """
        entry = self.get(key)
        if entry is not None and entry.kind != "held":
            entry.text = text
            if position is not None and position != self.position(key):
                self._queued.remove(entry)
                self._queued.insert(max(0, position - 1), entry)
            return
        entry = QueueEntry(key, text, "compress" if compress else "prompt")
        if position is None:
            self._queued.append(entry)
        else:
            self._queued.insert(max(0, min(position - 1, len(self._queued))), entry)

    def hold(self, text: str, turn_ids: tuple[str, ...] = ()) -> QueueEntry:
        """Offer a prompt that was not sent when the desk last closed (``turn_ids``: the
        saved prompts not sent it stands for)."""
        self._held_count += 1
        entry = QueueEntry(f"held-{self._held_count}", text, "held", turn_ids)
        self._held.append(entry)
        return entry

    def pop(self, key: str) -> QueueEntry | None:
        """Take a line away (it runs, it was dropped, or the person removed or sent it)."""
        entry = self.get(key)
        if entry is not None:
            (self._held if entry.kind == "held" else self._queued).remove(entry)
        return entry

    def last(self) -> QueueEntry | None:
        """The line Up on an empty prompt box edits: the last queued prompt, else the last held
        one (a queued ``/compress`` has no text to edit)."""
        editable = [e for e in self._queued if e.editable] or self._held
        return editable[-1] if editable else None

    def pending_chars(self) -> int:
        """Characters of the prompts the gateway will send next (the context gauge counts
        them)."""
        return sum(len(e.text) for e in self._queued if e.kind == "prompt")
