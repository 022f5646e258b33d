"""Writing a file atomically: a temporary file beside it, flushed and synced, then renamed."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_text_atomic(path: Path, text: str, *, new_file_mode: int = 0o644) -> None:
    """Replace ``path`` with ``text`` so a reader sees the old file or the new one, never half.

    The parent folder is created when missing. An existing file keeps its permission bits; a
    new one gets ``new_file_mode``.

    Args:
        path: the file to write.
        text: its new content (written as UTF-8).
        new_file_mode: permission bits of a file that did not exist yet.

    Raises:
        OSError: the folder or the file cannot be written (the old file is then unchanged).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = new_file_mode
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable where supported
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
