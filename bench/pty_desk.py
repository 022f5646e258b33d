"""The real ``desk`` in a pseudo-terminal, for benchmarks: start it, type, read what it paints.

:class:`PtyDesk` runs the installed ``desk`` (or ``python -m desk``) in a 120x40 pty with
TERM=xterm-256color, a fresh config folder and a fresh session database, and drains its output
on a thread of its own as fast as a terminal would, so the app never waits on a full pty.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from bisect import bisect_right
from collections.abc import Sequence
from pathlib import Path

KEEP_BYTES = 4_000_000
"""Bytes of screen output kept to search in (older output is dropped)."""


def desk_command() -> list[str]:
    """The ``desk`` script next to this interpreter, else on PATH, else ``python -m desk``."""
    script = Path(sys.executable).with_name("desk")
    if script.exists():
        return [str(script)]
    found = shutil.which("desk")
    return [found] if found else [sys.executable, "-m", "desk"]


class PtyDesk:
    """``desk ARGS`` in a pty.

    Args:
        args: the arguments after ``desk``.
        env: extra environment variables.
        rows: terminal rows.
        cols: terminal columns.
    """

    def __init__(
        self,
        args: Sequence[str],
        env: dict[str, str] | None = None,
        *,
        rows: int = 40,
        cols: int = 120,
    ) -> None:
        self._home = tempfile.mkdtemp(prefix="desk-bench-")
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        full_env = {
            k: v for k, v in os.environ.items() if not k.startswith(("TEXTUAL", "ESCDELAY"))
        }
        full_env.pop("COLUMNS", None)
        full_env.pop("LINES", None)
        full_env.update(
            TERM="xterm-256color",
            COLORTERM="truecolor",
            XDG_CONFIG_HOME=os.path.join(self._home, "config"),
            XDG_DATA_HOME=os.path.join(self._home, "data"),
        )
        full_env.update(env or {})
        self.started_at = time.monotonic()
        """``time.monotonic()`` just before the process was started."""
        self.proc = subprocess.Popen(
            [*desk_command(), *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=full_env,
            cwd=self._home,
            start_new_session=True,
            close_fds=True,
        )
        os.close(slave)
        self._fd = master
        self._data = bytearray()
        self._base = 0  # absolute offset of self._data[0]
        self._ends: list[int] = []  # absolute offset of each read's end, in order
        self._times: list[float] = []  # time.monotonic() of each read
        self._cond = threading.Condition()
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._read, name="pty-reader", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._closing.is_set():
            ready, _, _ = select.select([self._fd], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(self._fd, 1 << 16)
            except OSError:
                chunk = b""
            with self._cond:
                if not chunk:
                    break
                self._data += chunk
                self._ends.append(self._base + len(self._data))
                self._times.append(time.monotonic())
                if len(self._data) > KEEP_BYTES:
                    drop = len(self._data) - KEEP_BYTES // 2
                    del self._data[:drop]
                    self._base += drop
                    keep = bisect_right(self._ends, self._base)
                    del self._ends[:keep], self._times[:keep]
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    @property
    def mark(self) -> int:
        """The offset of the next byte to be read (search from here for what comes next)."""
        with self._cond:
            return self._base + len(self._data)

    def write(self, data: bytes) -> float:
        """Type ``data``; returns ``time.monotonic()`` right after the write."""
        os.write(self._fd, data)
        return time.monotonic()

    def wait_for(self, needle: bytes, timeout_s: float, start: int = 0) -> float | None:
        """Wait until ``needle`` is painted after offset ``start``.

        Returns:
            ``time.monotonic()`` when the read that completed it came from the terminal (not
            when this call saw it: a caller that looks late still gets when it was painted),
            or None after ``timeout_s`` seconds.
        """

        def found_at() -> int:
            begin = max(0, start - self._base - len(needle))
            return self._data.find(needle, begin)

        with self._cond:
            self._cond.wait_for(lambda: found_at() >= 0 or not self._thread.is_alive(), timeout_s)
            at = found_at()
            if at < 0:
                return None
            end = self._base + at + len(needle)
            index = bisect_right(self._ends, end - 1)
            return self._times[index] if index < len(self._times) else time.monotonic()

    def since(self, start: int) -> bytes:
        """What was painted after offset ``start`` (what is still kept of it)."""
        with self._cond:
            return bytes(self._data[max(0, start - self._base) :])

    def tail(self, size: int = 800) -> bytes:
        """The last ``size`` bytes painted."""
        with self._cond:
            return bytes(self._data[-size:])

    def quit(self, timeout_s: float = 15.0) -> int | None:
        """Ctrl+Q, then wait; kill it when it does not exit. Returns the exit code (None if
        it had to be killed)."""
        code: int | None = None
        try:
            if self.proc.poll() is None:
                self.write(b"\x11")
            code = self.proc.wait(timeout_s)
        except (OSError, subprocess.TimeoutExpired):
            code = None
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5.0)
            self._closing.set()
            self._thread.join(5.0)
            os.close(self._fd)
            shutil.rmtree(self._home, ignore_errors=True)
        return code
