"""Human text for tool calls: their arguments, their outcome, and the tail of their output.

Pure functions (no widgets), used by :class:`desk.widgets.tool_card.ToolCard`, the approval
prompt and a resumed session's tool lines (:mod:`desk.widgets.saved_tool_calls`): a stopped
call reads the same live and resumed (:func:`stopped_line`). Everything they return is safe
to show: the model chose the arguments and the tool printed the output, so control characters
are made visible (:func:`agent.terminal_text.terminal_safe`); a JSON ``\\u001b`` in the
arguments is caught too, since it is decoded first.
"""

from __future__ import annotations

import json

from agent.stops import USER_STOPPED, YOU_STOPPED
from agent.tools.stop_text import read_stopped_head
from contract.events import ToolComplete
from contract.text import terminal_safe
from desk.receipts import format_elapsed

ARGUMENT_CHARS = 200
"""Longest argument summary shown on a card's summary line, in characters."""


def _one_line(text: str, limit: int) -> str:
    line = " ".join(terminal_safe(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def describe_arguments(name: str, arguments: str, limit: int = ARGUMENT_CHARS) -> str:
    """The arguments of a call as a person reads them.

    Args:
        name: the tool (``shell``, ``read_file``, ``write_file``, ``list_dir``, or another).
        arguments: the call's JSON arguments, as the model sent them (may be invalid).
        limit: longest result, in characters.

    Returns:
        ``$ <command>`` for ``shell``; the path for the file tools (with the size of the
        content for ``write_file``); otherwise the compact JSON (or the raw text when it does
        not parse).
    """
    try:
        args = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return _one_line(arguments, limit)
    if not isinstance(args, dict):
        return _one_line(arguments, limit)
    if not args:
        return ""
    if name == "shell" and isinstance(args.get("command"), str):
        return _one_line("$ " + args["command"], limit)
    path = args.get("path")
    if name in ("read_file", "list_dir") and isinstance(path, str):
        return _one_line(path, limit)
    if name == "write_file" and isinstance(path, str):
        content = args.get("content")
        size = f" ({len(content):,} characters)" if isinstance(content, str) else ""
        return _one_line(path, limit - len(size)) + size
    return _one_line(json.dumps(args, ensure_ascii=False, separators=(", ", ": ")), limit)


def full_command(name: str, arguments: str) -> str | None:
    """The whole shell command of a ``shell`` call (for the approval prompt, made safe to
    show), else None."""
    if name != "shell":
        return None
    try:
        args = json.loads(arguments)
    except ValueError:
        return None
    command = args.get("command") if isinstance(args, dict) else None
    return terminal_safe(command) if isinstance(command, str) else None


def written_path(name: str, arguments: str) -> str | None:
    """The file a ``write_file`` or ``edit_file`` call writes, or the files an ``apply_patch``
    call changes (``a.py, b.py and 2 more``), as the model named them (made safe to show);
    else None."""
    if name not in ("write_file", "edit_file", "apply_patch"):
        return None
    try:
        args = json.loads(arguments)
    except ValueError:
        return None
    if not isinstance(args, dict):
        return None
    if name == "apply_patch":
        patch = args.get("patch")
        return patch_files(patch) if isinstance(patch, str) else None
    path = args.get("path")
    return terminal_safe(path) if isinstance(path, str) else None


_PATCH_HEADERS = ("*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: ")


def patch_files(patch: str, most: int = 2) -> str | None:
    """The files a patch names (``a.py``, ``a.py, b.py``, ``a.py, b.py and 2 more``), or None
    when it names none."""
    names: list[str] = []
    for line in patch.splitlines():
        stripped = line.strip()
        for header in _PATCH_HEADERS:
            if stripped.startswith(header):
                name = stripped[len(header) :].strip()
                if name and name not in names:
                    names.append(name)
    if not names:
        return None
    shown = ", ".join(names[:most])
    more = len(names) - most
    return terminal_safe(f"{shown} and {more} more" if more > 0 else shown)


def stopped_text(stopped_by: str) -> str:
    """``stopped by the user`` reads ``stopped by you`` on the person's own screen (also at
    the start of a longer text: ``stopped by the user before it started``)."""
    if stopped_by.startswith(USER_STOPPED):
        return YOU_STOPPED + stopped_by[len(USER_STOPPED) :]
    return stopped_by


def children_text(count: int) -> str:
    """``"1 child process ended"`` / ``"3 child processes ended"`` ("" for none)."""
    if not count:
        return ""
    return f"{count:,} child process ended" if count == 1 else f"{count:,} child processes ended"


def stopped_line(stopped_by: str, children_ended: int = 0) -> str:
    """How a call a stop cut ends, live and resumed: ``"■ stopped by you"``, ``"■ stopped by
    you · 1 child process ended"``, ``"■ stopped by the system: quitting"`` (made safe)."""
    parts = ["■ " + stopped_text(stopped_by), children_text(children_ended)]
    return terminal_safe(" · ".join(p for p in parts if p))


def saved_result_line(line: str) -> str:
    """The first line of a saved tool result as the resumed transcript shows it: the result of
    a call a stop cut (``stopped by the user (1 child process ended)``, as the model read it)
    reads as its live card did (:func:`stopped_line`); any other line as it is."""
    head = read_stopped_head(line)
    return line if head is None else stopped_line(head.stopped_by, head.children_ended)


def outcome_text(result: ToolComplete, elapsed_s: float | None) -> str:
    """The right-hand side of a finished card's summary line.

    Returns:
        e.g. ``"✓ exit 0 · 0.3 s"``, ``"✖ exit 2 · 1.0 s"``,
        ``"■ stopped by you · 1 child process ended · 4.2 s"``, or ``"✖ <first line>"``
        for a call that failed without running (declined, bad arguments).
    """
    took = format_elapsed(elapsed_s) if elapsed_s is not None else ""
    if result.stopped_by is not None:
        parts = [stopped_line(result.stopped_by, result.children_ended)]
    elif result.exit_code is not None:
        mark = "✓" if result.exit_code == 0 and not result.is_error else "✖"
        parts = [f"{mark} exit {result.exit_code}"]
    elif result.is_error:
        first = result.content.strip().splitlines()[0] if result.content.strip() else "failed"
        parts = ["✖ " + _one_line(first, 80)]
    else:
        parts = ["✓ done"]
    parts.append(took)
    return terminal_safe(" · ".join(p for p in parts if p))


def tail_lines(text: str, lines: int) -> str:
    """The last ``lines`` lines of ``text`` (a trailing newline does not count as a line; not
    made safe: the caller decides whether colours are kept)."""
    body = text[:-1] if text.endswith("\n") else text
    parts = body.split("\n")
    if len(parts) <= lines:
        return body
    return "\n".join(parts[-lines:])
