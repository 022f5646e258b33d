"""What an ``edit_file`` or ``apply_patch`` call will change, for its approval prompt.

The call's change is planned here as the tool will plan it when it runs
(:meth:`~agent.tools.edits.EditFileTool.plan`, :func:`~agent.tools.edits.plan_patch`), from the
files on the gateway's disk, and shown as a unified diff: one file's for ``edit_file`` (the
same preview as ``write_file``'s), every file's for a patch, with a note counting the files
and lines (``2 files · +5 −2 lines``). A change that cannot be made is never asked about (the
tool batch refuses it first); should the disk change in between, the note says the call will
be refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.checkpoints.diff import file_diff, shown_path
from agent.tools.changes import EditRefused
from agent.tools.edits import EditFileTool, plan_patch
from tui_gateway.turns.approval_preview import DIFF_LINES, NO_PREVIEW, ChangePreview, write_preview


def edit_preview(tool: str, args: dict[str, Any], cwd: Path) -> ChangePreview:
    """The preview of an ``edit_file`` or ``apply_patch`` call (:data:`NO_PREVIEW` for any
    other tool); never raises.

    Args:
        tool: the tool's name.
        args: the call's checked arguments (``edit_file``'s ``path`` resolved already).
        cwd: the workspace the patch's paths are relative to.
    """
    try:
        if tool == "edit_file":
            (change,) = EditFileTool().plan(args, cwd)
            return write_preview(change.path, (change.after or b"").decode("utf-8"))
        if tool == "apply_patch" and isinstance(args.get("patch"), str):
            return _patch_preview(str(args["patch"]), cwd)
    except EditRefused as exc:
        return ChangePreview(note=f"the call will be refused: {exc}")
    except (OSError, ValueError) as exc:
        return ChangePreview(note=f"cannot show the change ({exc})")
    return NO_PREVIEW


def _patch_preview(patch: str, cwd: Path) -> ChangePreview:
    changes = plan_patch(patch, cwd)
    if not changes:
        return ChangePreview("diff", "", "no change: the files already hold this patch")
    texts: list[str] = []
    added = removed = 0
    for change in changes:
        diff = file_diff(shown_path(change.path, cwd), change.before, change.after)
        texts.append(diff.text)
        added += diff.added
        removed += diff.removed
    lines = "\n".join(texts).split("\n")
    cut = ""
    if len(lines) > DIFF_LINES:
        cut = f" · diff cut at {DIFF_LINES:,} of {len(lines):,} lines"
        lines = lines[:DIFF_LINES]
    files = "1 file" if len(changes) == 1 else f"{len(changes):,} files"
    return ChangePreview("diff", "\n".join(lines), f"{files} · +{added:,} −{removed:,} lines{cut}")
