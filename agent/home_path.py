"""A path as a person writes it, ``~`` expanded the way a shell does, never an error."""

from __future__ import annotations

import os
from pathlib import Path


def expand_home(path: str | os.PathLike[str]) -> Path:
    """``path`` with a leading ``~`` or ``~user`` replaced by that home folder.

    As a shell does, a ``~user`` whose user does not exist (or a ``~`` with no home known) is
    left as written: ``~nosuchuser/x`` names a folder called ``~nosuchuser``, which a tool then
    reports missing. :meth:`pathlib.Path.expanduser` raises ``RuntimeError`` there instead, and
    text from a prompt, a model's call or a flag must not end a turn or the desk.

    Args:
        path: a path as written (a model's argument, a ``@`` mention, a flag, a command).
    """
    written = Path(path)
    try:
        return written.expanduser()
    except RuntimeError:  # "Could not determine home directory."
        return written


def unknown_home(path: str | os.PathLike[str]) -> str | None:
    """The ``~user`` (or ``~``) ``path`` starts with when that home is not known, else None:
    for a setting (``--db ~nosuchuser/d.db``), where a folder named so is surely a typo."""
    text = os.fspath(path)
    if not text.startswith("~"):
        return None
    head = text.split("/", 1)[0]
    return head if str(expand_home(head)) == head else None
