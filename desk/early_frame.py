"""The desk's first frame, drawn before anything heavy is imported, and keys kept meanwhile.

Importing the app, the gateway and Textual takes most of a second on a small machine (more
when the disk cache is cold), and a server probe may take longer. So ``desk`` draws its layout
at once, with the standard library only: the alternate screen, the welcome line, the prompt
box with its placeholder, the status bar and the footer. The terminal stops echoing and stops
waiting for a whole line (``ECHO`` and ``ICANON`` off), so what the person types meanwhile waits
in the terminal's input queue unseen, and the app reads it as its first keys (see
:meth:`desk.app.DeskApp.on_mount`). Enter stays a carriage return (``ICRNL`` off: translated, it
would reach the app as Ctrl+J, a new line in the box), so an Enter typed meanwhile sends the
prompt once the session is up (:meth:`desk.screens.desk_screen.DeskScreen.desk_ready`). Ctrl+Q
and Ctrl+C are kept the same way: flow control is off (``IXON``: the terminal would swallow
Ctrl+Q as "resume output") and so are signal keys (``ISIG``: Ctrl+C would end the start with
130 and reach the shell too), so a Ctrl+Q typed meanwhile quits once the desk is up, and a
Ctrl+C is a first Ctrl+C there (a second one quits), as it is at any other time. What was
typed even before this frame, under the terminal's own rules, is read at the switch with its
Enters turned back into Enters (:mod:`desk.typed_ahead`); a Ctrl+Q typed then was taken by
flow control and is lost.

Textual saves the terminal's modes when it starts and restores those at exit: the modes set
here. :meth:`EarlyFrame.close` puts back the ones the terminal had before ``desk`` started,
once the app has ended (or at once, when ``desk`` exits before it ran). ``DESK_EARLY_FRAME=0``
turns the frame off (the app then paints first).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import sys
import termios
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from desk import typed_ahead

PLACEHOLDER = "Ask anything · Enter sends · Ctrl+J new line"
"""The prompt box's placeholder (the app's own, :data:`desk.screens.desk_widgets.PLACEHOLDER`)."""

NOT_THE_APP = frozenset({"-h", "--help", "gateway", "serve", "run", "acp"})
"""First arguments (or flags) with which ``desk`` does not start the app."""

# desk's default theme (themes/dark.toml, Textual's dark palette), as 24-bit colours.
_BACKGROUND = "18;18;18"
_FOREGROUND = "224;224;224"
_MUTED = "121;121;121"
_SURFACE = "30;30;30"
_PANEL = "36;47;56"
_BORDER = "13;54;85"


def _bg(rgb: str) -> str:
    return f"\x1b[48;2;{rgb}m"


def _fg(rgb: str) -> str:
    return f"\x1b[38;2;{rgb}m"


def frame_text(cols: int, rows: int, *, coloured: bool = True) -> str:
    """The escape sequences that draw the first frame on a ``cols`` x ``rows`` terminal.

    Args:
        cols: terminal width in cells.
        rows: terminal height in cells.
        coloured: paint desk's default theme (False: the terminal's own colours, for a
            person who chose another theme).

    Returns:
        the text to write after entering the alternate screen.
    """
    cols, rows = max(cols, 20), max(rows, 6)

    def paint(rgb: str) -> str:
        return _bg(rgb) if coloured else ""

    def ink(rgb: str) -> str:
        return _fg(rgb) if coloured else ""

    def row(y: int, text: str, back: str, fore: str) -> str:
        cut = text[:cols]
        return f"\x1b[{y};1H{paint(back)}{ink(fore)}{cut}{' ' * (cols - len(cut))}"

    out = [paint(_BACKGROUND), ink(_FOREGROUND), "\x1b[2J\x1b[H"]
    out.append(row(1, " Welcome to desk", _BACKGROUND, _FOREGROUND))
    out.append(row(rows - 3, " " + "─" * (cols - 2), _BACKGROUND, _BORDER))
    box = f" {paint(_SURFACE)}{ink(_MUTED)} {PLACEHOLDER}"
    out.append(row(rows - 2, "", _BACKGROUND, _MUTED) + f"\x1b[{rows - 2};1H{box}")
    out.append(row(rows - 1, " ◌ starting…", _PANEL, _MUTED))
    out.append(row(rows, " ^q Quit  f1 Help", _PANEL, _FOREGROUND))
    out.append("\x1b[0m")
    return "".join(out)


def default_theme_chosen(env: Mapping[str, str]) -> bool:
    """True unless ``config.toml`` names a theme other than desk's default (``dark``): the
    frame is then drawn in the terminal's own colours. Any trouble reading it counts as the
    default (the app reports it)."""
    base = env.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".config"
    try:
        with (root / "desk" / "config.toml").open("rb") as file:
            theme = tomllib.load(file).get("theme", "dark")
    except (OSError, ValueError):
        return True
    return theme in ("dark", "")


class EarlyFrame:
    """The first frame on a terminal, and the terminal modes to give back.

    Use :meth:`show`; then :meth:`close` once (idempotent).

    Args:
        fd: the terminal (standard input).
        out: where the frame was written (standard output).
        saved: the terminal's modes before ``desk`` changed them.
    """

    def __init__(self, fd: int, out: TextIO, saved: list[Any]) -> None:
        self._fd = fd
        self._out = out
        self._saved = saved
        self._handed_over = False
        self._closed = False

    @classmethod
    def show(
        cls,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        coloured: bool = True,
    ) -> EarlyFrame | None:
        """Draw the frame when ``desk`` is about to start its app on a terminal.

        Args:
            argv: the arguments after the program name.
            env: the environment (``DESK_EARLY_FRAME=0`` turns it off; ``TERM=dumb`` too).
            stdin: the terminal's input (default ``sys.stdin``).
            stdout: the terminal's output (default ``sys.stdout``).
            coloured: paint desk's default theme.

        Returns:
            the frame, or None when there is no terminal or ``desk`` will not start its app.
        """
        if env.get("DESK_EARLY_FRAME", "1") == "0" or env.get("TERM", "") in ("", "dumb"):
            return None
        if any(arg in NOT_THE_APP for arg in argv[:1]) or "-h" in argv or "--help" in argv:
            return None
        stdin = stdin or sys.stdin
        stdout = stdout or sys.stdout
        try:
            fd, out_fd = stdin.fileno(), stdout.fileno()
            if not (os.isatty(fd) and os.isatty(out_fd)):
                return None
            saved = termios.tcgetattr(fd)
            quiet = termios.tcgetattr(fd)
            quiet[0] &= ~termios.ICRNL  # Enter stays CR (Enter), not LF (Ctrl+J: a new line)
            quiet[0] &= ~termios.IXON  # Ctrl+Q and Ctrl+S stay keys, not flow control
            quiet[3] &= ~(termios.ECHO | termios.ICANON | termios.ISIG)  # Ctrl+C stays a key
            quiet[6][termios.VMIN] = 1
            quiet[6][termios.VTIME] = 0
            termios.tcsetattr(fd, termios.TCSANOW, quiet)
            if saved[0] & termios.ICRNL:
                typed_ahead.keep(typed_ahead.uncooked(_pending(fd)))
        except (OSError, ValueError, termios.error):
            return None
        frame = cls(fd, stdout, saved)
        try:
            size = os.get_terminal_size(out_fd)
            stdout.write("\x1b[?1049h\x1b[?25l" + frame_text(*size, coloured=coloured))
            stdout.flush()
        except OSError:
            frame.close()
            return None
        return frame

    def hand_over(self) -> None:
        """The app owns the screen from now on (it leaves the alternate screen itself)."""
        self._handed_over = True

    def close(self) -> None:
        """Give the terminal back its modes (and, when the app never ran, its main screen)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError, ValueError):
            if not self._handed_over:
                self._out.write("\x1b[0m\x1b[?25h\x1b[?1049l")
                self._out.flush()
        with contextlib.suppress(termios.error, OSError, ValueError):
            termios.tcsetattr(self._fd, termios.TCSANOW, self._saved)


def _pending(fd: int) -> bytes:
    """What waits in the terminal's input queue now (b"" when nothing does)."""
    waiting = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]
    return os.read(fd, waiting) if waiting > 0 else b""
