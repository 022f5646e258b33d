"""What the gateway could not save, written to a file of its own so that nothing is lost.

When the gateway gives up on the store for a session (an error that will not pass by itself,
or a quit while the database is still unavailable), every write it still holds for that
session goes to ``<folder>/<session id>.jsonl``: one JSON object per write, appended, with the
prompts and replies in full. The folder is ``$XDG_DATA_HOME/desk/unsaved`` (created private),
or a private folder under the system's temporary directory when that cannot be written. The
person is told the file's path (``session.store_error``, and ``gateway.shutdown``'s report).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from agent.provider.types import ChatMessage
from agent.store import default_db_path
from agent.valid_text import valid_text


@dataclass(frozen=True, slots=True)
class UnsavedMessage:
    """One message a write would have added.

    Attributes:
        role: ``user``, ``assistant``, ``tool`` or ``system``.
        content: the text, in full.
        partial: a reply that was cut short.
    """

    role: str
    content: str
    partial: bool = False

    @classmethod
    def of(cls, message: ChatMessage, *, partial: bool = False) -> UnsavedMessage:
        """The export of a transcript message."""
        return cls(role=message.role, content=message.content, partial=partial)


@dataclass(frozen=True, slots=True)
class Unsaved:
    """What one write would have saved.

    Attributes:
        action: what the write was for, as the person is told (``"save the reply"``).
        session_id: the session.
        turn_id: the turn it belongs to, if any.
        messages: the messages it would have added, in order.
        exit_reason: for a turn's close, how the turn ended.
        error: for a turn's close, its one-line error, if any.
        title: for a rename or a new session, the title.
    """

    action: str
    session_id: str
    turn_id: str | None = None
    messages: tuple[UnsavedMessage, ...] = ()
    exit_reason: str | None = None
    error: str | None = None
    title: str | None = None


def default_folder() -> Path:
    """``unsaved`` beside the default database: ``$XDG_DATA_HOME/desk/unsaved``."""
    return default_db_path().parent / "unsaved"


def export(records: Sequence[Unsaved], session_id: str, folder: Path | None = None) -> Path:
    """Append ``records`` to the session's file of unsaved writes; returns its path.

    Args:
        records: what was not saved, in the order it happened.
        session_id: the session they belong to (names the file).
        folder: where the file goes; None for :func:`default_folder`. When it cannot be
            written, a private folder under the temporary directory is used instead.

    Returns:
        the file's path.

    Raises:
        OSError: neither folder can be written.
    """
    lines = valid_text(  # what could not be saved is written whatever it holds
        "".join(
            json.dumps({"written_at": time.time(), **asdict(record)}, ensure_ascii=False) + "\n"
            for record in records
        )
    )
    fallback = Path(tempfile.gettempdir()) / f"desk-unsaved-{os.getuid()}"
    places = [folder or default_folder(), fallback]
    error: OSError | None = None
    for place in places:
        try:
            place.mkdir(mode=0o700, parents=True, exist_ok=True)
            path = place / f"{session_id}.jsonl"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                data = memoryview(lines.encode("utf-8"))
                while data:
                    data = data[os.write(fd, data) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            return path
        except OSError as exc:
            error = exc
    assert error is not None
    raise error
