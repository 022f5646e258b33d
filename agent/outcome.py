"""How a turn ended, as closed types: its status and its exit reason (DESIGN.md, glossary).

Both are strings on the wire and in the store, unchanged: :class:`TurnStatus` is a
:class:`~enum.StrEnum` and :class:`ExitReason` a ``str`` whose every value is one of the five
forms, so ``result.status == "completed"`` and ``result.exit_reason == "interrupted_by_user"``
read as they always did, while a value outside the forms cannot be made.
"""

from __future__ import annotations

import re
from enum import StrEnum

NOT_SENT_PREFIX = "not sent: "
"""How the error of a turn whose prompt was never sent begins: a queued prompt closed as a turn
that never ran, or a prompt that could not fit the context window."""


class TurnStatus(StrEnum):
    """How a turn ended, in one word."""

    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    FAILED = "failed"
    MAX_ITERATIONS = "max_iterations"


class ExitKind(StrEnum):
    """The form of an exit reason (the word before any parenthesis)."""

    COMPLETED = "completed"
    INTERRUPTED_BY_USER = "interrupted_by_user"
    INTERRUPTED_BY_SYSTEM = "interrupted_by_system"
    FAILED = "failed"
    MAX_ITERATIONS = "max_iterations"

    @property
    def status(self) -> TurnStatus:
        """The turn status this form of exit goes with."""
        if self in (ExitKind.INTERRUPTED_BY_USER, ExitKind.INTERRUPTED_BY_SYSTEM):
            return TurnStatus.INTERRUPTED
        return TurnStatus(self.value)


_BARE = frozenset({ExitKind.COMPLETED, ExitKind.INTERRUPTED_BY_USER})
_FORM = re.compile(r"(?P<kind>[a-z_]+)(?:\((?P<detail>[^()\s]+)\))?")
_ERROR_CLASS = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


def _parse(text: str) -> tuple[ExitKind, str | None]:
    """The form and detail of an exit reason, or ValueError."""
    found = _FORM.fullmatch(text)
    if found is None:
        raise ValueError(f"not an exit reason: {text!r}")
    try:
        kind = ExitKind(found["kind"])
    except ValueError:
        raise ValueError(f"not an exit reason: {text!r}") from None
    detail: str | None = found["detail"]
    if (kind in _BARE) != (detail is None):
        raise ValueError(f"not an exit reason: {text!r}")
    if kind is ExitKind.MAX_ITERATIONS and not (detail or "").isdigit():
        raise ValueError(f"max_iterations needs a count, not {text!r}")
    if kind is ExitKind.FAILED and _ERROR_CLASS.fullmatch(detail or "") is None:
        raise ValueError(f"failed needs an error class, not {text!r}")
    return kind, detail


PATTERN = (
    r"^(completed|interrupted_by_user|interrupted_by_system\([^()\s]+\)"
    r"|failed\([A-Za-z_][A-Za-z0-9_.]*\)|max_iterations\([0-9]+\))$"
)
"""The five forms as one regular expression (JSON Schema's ``pattern`` dialect)."""


class ExitReason(str):
    """Why a turn ended: one of ``completed``, ``interrupted_by_user``,
    ``interrupted_by_system(<surface>)``, ``failed(<error class>)`` or ``max_iterations(<n>)``.

    A ``str`` that only holds those forms (it is its own wire and store form): building one
    parses the text. Make one with the constructor named after its form, read one back with
    ``parse`` (or the class itself).

    Raises:
        ValueError: from ``ExitReason(text)`` when ``text`` is none of the forms.
    """

    __slots__ = ()

    PATTERN = PATTERN
    """The forms as one regular expression (for a JSON Schema)."""

    def __new__(cls, text: str) -> ExitReason:
        _parse(text)
        return super().__new__(cls, text)

    @classmethod
    def parse(cls, text: str) -> ExitReason:
        """Read an exit reason back from its text (the wire's or the store's).

        Raises:
            ValueError: when ``text`` is none of the five forms.
        """
        return cls(text)

    @classmethod
    def completed(cls) -> ExitReason:
        """``completed``."""
        return cls(ExitKind.COMPLETED.value)

    @classmethod
    def interrupted_by_user(cls) -> ExitReason:
        """``interrupted_by_user``: the turn's first hard stop came from a user surface."""
        return cls(ExitKind.INTERRUPTED_BY_USER.value)

    @classmethod
    def interrupted_by_system(cls, surface: str) -> ExitReason:
        """``interrupted_by_system(<surface>)``, e.g. ``interrupted_by_system(inactivity)``."""
        return cls(f"{ExitKind.INTERRUPTED_BY_SYSTEM.value}({surface})")

    @classmethod
    def failed(cls, error_class: str) -> ExitReason:
        """``failed(<error class>)``, e.g. ``failed(ConnectFailed)``."""
        return cls(f"{ExitKind.FAILED.value}({error_class})")

    @classmethod
    def max_iterations(cls, limit: int) -> ExitReason:
        """``max_iterations(<n>)``: the turn made ``limit`` model calls and was cut there."""
        return cls(f"{ExitKind.MAX_ITERATIONS.value}({limit})")

    @property
    def kind(self) -> ExitKind:
        """The form (``interrupted_by_system`` for ``interrupted_by_system(inactivity)``)."""
        return _parse(self)[0]

    @property
    def detail(self) -> str | None:
        """What the parenthesis holds (a surface, an error class, a count), or None."""
        return _parse(self)[1]

    @property
    def status(self) -> TurnStatus:
        """The turn status this exit reason goes with."""
        return self.kind.status


__all__ = ["ExitKind", "ExitReason", "TurnStatus"]
