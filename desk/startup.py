"""What the desk does at start about saved sessions: what it says about the store, and which
session to show.

The gateway opens the session database (:func:`tui_gateway.assembly.build_gateway`); one that
cannot be opened is not fatal for the desk: it runs with sessions kept in memory and shows the
one-line reason (:func:`unsaved_notice`, :attr:`Startup.notice`). :class:`Startup` is what the
app receives: resume a session or start a new one, the notice, and the wall clock the sessions
sidebar measures "5 min ago" with.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

RECENT_MESSAGES = 200
"""Messages of a resumed session rendered at first; older ones wait behind "show more"."""


@dataclass(frozen=True, slots=True)
class Startup:
    """How the desk starts.

    Attributes:
        resume: reopen a saved session instead of creating a new one.
        resume_id: the session to reopen, or None for the most recent one.
        notice: one line to show at start (why sessions are not saved, that the shell runs
            without a sandbox), or "".
        saved: False when sessions are not saved (no database): no "to resume" line at exit.
        wall_clock: unix seconds now (``time.time`` or a test's pinned clock), for relative
            times in the sessions sidebar.
        recent_messages: how many of a resumed session's last messages are rendered at first.
        model: a model named with ``--model``: a resumed session uses it from now on (None:
            the session goes on with its own, as saved).
        history: the file of the prompts sent in earlier runs (Up recalls them), or None to
            keep this run's alone (:mod:`desk.history_file`).
        db_flag: the ``--db`` given on the command line, or "": the resume hint repeats it
            (a database named otherwise, by the environment or the config file, is found
            again the same way).
    """

    resume: bool = False
    resume_id: str | None = None
    notice: str = ""
    saved: bool = True
    wall_clock: Callable[[], float] = time.time
    recent_messages: int = RECENT_MESSAGES
    model: str | None = None
    history: Path | None = None
    db_flag: str = ""

    def resume_command(self, session_id: str) -> str:
        """The command that opens ``session_id`` again: ``desk --resume ID``, with the
        ``--db`` given (quoted for a shell) when one was."""
        db = f" --db {shlex.quote(self.db_flag)}" if self.db_flag else ""
        return f"desk{db} --resume {session_id}"


def unsaved_notice(reason: str) -> str:
    """The line the desk shows when the session database cannot be opened.

    Args:
        reason: why, one line (:attr:`tui_gateway.assembly.StoreUnavailable.reason`).
    """
    return f"sessions are not saved: {reason}; this desk keeps them in memory only"
