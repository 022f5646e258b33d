"""``/export``: the session shown in the transcript, written as Markdown.

The export is made from what the desk shows (desk never reads the store), headed by the
session's current title: each prompt as a "You" block, each reply as an "Assistant" block with
its stop receipt or error line under it as a quote, error notes and compression lines (what a
compression left, ``⇊ compression cancelled by you …``) as quotes, and the messages of a resumed
session that are not rendered yet (above "show more"). A transcript block of another kind joins
in by offering ``export_markdown() -> str``: tool cards (the call's arguments, its output capped
at :data:`desk.export_text.EXPORT_OUTPUT_CHARS`, how it ended and its stop line), a resumed
session's tool calls, child agents and summaries; anything else is left out.
"""

from __future__ import annotations

import errno
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from textual.widget import Widget
from textual.widgets import Static

from agent.home_path import expand_home
from agent.usage import TokenUsage
from contract.text import terminal_safe
from desk.export_text import quote
from desk.markdown_cuts import closed_fences
from desk.widgets.assistant_reply import AssistantReply
from desk.widgets.user_prompt import UserPrompt
from tui_gateway.atomic import write_text_atomic

BlockKind = Literal["user", "assistant", "error", "note", "other"]


@dataclass(frozen=True, slots=True)
class ExportBlock:
    """One block of the export.

    Attributes:
        kind: ``user``, ``assistant``, ``error`` (a transcript error note), ``note`` (a
            compression's line) or ``other`` (Markdown a block made itself).
        text: the block's text (Markdown).
        note: the line under a reply (stop receipt or error), or "".
        status: ``sent``/``queued``/``dropped`` for a prompt, the outcome for a reply, or "".
    """

    kind: BlockKind
    text: str
    note: str = ""
    status: str = ""


@runtime_checkable
class ExportsMarkdown(Protocol):
    """A transcript block that writes its own part of the export."""

    def export_markdown(self) -> str:
        """The block as Markdown (no trailing blank line needed)."""
        ...


def blocks_from(children: Iterable[Widget]) -> list[ExportBlock]:
    """The export blocks of the transcript's children, in order.

    Args:
        children: the transcript's child widgets.

    Returns:
        one block per prompt, reply, error note, compression line or self-exporting block.
    """
    blocks: list[ExportBlock] = []
    for child in children:
        if isinstance(child, UserPrompt):
            blocks.append(ExportBlock("user", child.text, child.detail, child.status))
        elif isinstance(child, AssistantReply):
            blocks.append(ExportBlock("assistant", child.text, child.note, child.outcome or ""))
        elif isinstance(child, ExportsMarkdown):
            text = child.export_markdown()
            if text.strip():
                blocks.append(ExportBlock("other", text))
        elif isinstance(child, Static) and child.has_class("note") and child.has_class("-error"):
            blocks.append(ExportBlock("error", str(child.content)))
        elif isinstance(child, Static) and child.has_class("compression-note"):
            blocks.append(ExportBlock("note", str(child.content)))
    return blocks


def session_markdown(
    blocks: Iterable[ExportBlock],
    *,
    session_id: str,
    model: str,
    exported_at: datetime,
    title: str = "",
    usage: TokenUsage | None = None,
) -> str:
    """The Markdown document.

    Args:
        blocks: the blocks, in transcript order.
        session_id: the session's id.
        model: the model shown for the session.
        exported_at: when the export was made (local time, shown to minutes).
        title: the session's title as it is now ("" heads it ``desk session <id>``).
        usage: the session's model requests summed, as the gateway counted them (a line
            under the heading: ``Tokens: 12,345 in (2,000 cached) · 678 out · 3 requests``);
            None or none yet: no line.

    Returns:
        the document, ending with one newline, its control characters made visible (a file
        that is read with ``cat`` or ``less -R`` must not command the terminal).
    """
    heading = " ".join(title.split()) or f"desk session {session_id}"
    parts = [
        f"# {heading}",
        f"Session {session_id} · model: {model} · exported {exported_at:%Y-%m-%d %H:%M}",
    ]
    if usage is not None and usage.requests:
        parts.append(f"Tokens: {usage.line()}")
    for block in blocks:
        if block.kind == "user":
            heading = "## You"
            if block.status == "queued":
                heading += " (queued, not run yet)"
            elif block.status == "dropped":
                heading += " (not sent" + (f": {block.note}" if block.note else "") + ")"
            parts += [heading, block.text.strip() or "_(empty)_"]
        elif block.kind == "assistant":
            parts.append("## Assistant")
            if block.text.strip():
                parts.append(closed_fences(block.text.strip()))
            if block.status == "":
                parts.append("_(still running when exported)_")
            if block.note:
                parts.append(quote(block.note))
        elif block.kind in ("error", "note"):
            parts.append(quote(block.text))
        else:
            parts.append(block.text.strip())
    return terminal_safe("\n\n".join(parts) + "\n")


def default_export_path(session_id: str, when: datetime, folder: Path) -> Path:
    """``<folder>/desk-<session>-<YYYY-MM-DD>.md``."""
    return folder / f"desk-{session_id}-{when:%Y-%m-%d}.md"


def resolve_export_path(arg: str, session_id: str, when: datetime, cwd: Path) -> Path:
    """Where ``/export [PATH]`` writes.

    Args:
        arg: the PATH typed ("" for the default name in ``cwd``); ``~`` is expanded, a
            relative path is taken from ``cwd``, and an existing folder gets the default name.
        session_id: the session's id.
        when: the export time (for the default name).
        cwd: the working folder.

    Returns:
        the absolute path of the file to write.
    """
    if not arg.strip():
        return default_export_path(session_id, when, cwd).absolute()
    path = expand_home(arg.strip())
    if not path.is_absolute():
        path = cwd / path
    if path.is_dir():
        path = default_export_path(session_id, when, path)
    return path.absolute()


def write_export(path: Path, markdown: str) -> None:
    """Write the document atomically into a folder that exists (none is created).

    Raises:
        OSError: it cannot be written; ``FileNotFoundError`` when its folder does not exist
            (its ``strerror`` says which).
    """
    if not path.parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, f"there is no folder {path.parent}")
    write_text_atomic(path, markdown)
