"""Keys typed while the first frame is up stay in the terminal's input queue for the app.

Ctrl+Q must not be taken by the terminal as flow control ("resume output"), nor Ctrl+C turned
into SIGINT: both reach the app as keys once it is up, as an Enter does.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import sys
import termios

import pytest

from desk.early_frame import EarlyFrame

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux pty test")


def _drain(master: int) -> None:
    while select.select([master], [], [], 0)[0]:
        if not os.read(master, 65536):
            return


def _read_exactly(fd: int, count: int) -> bytes:
    got = b""
    while len(got) < count:
        ready, _, _ = select.select([fd], [], [], 10.0)
        if not ready:
            break
        got += os.read(fd, count - len(got))
    return got


def test_ctrl_q_ctrl_c_and_enter_typed_under_the_first_frame_are_kept_as_keys() -> None:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 10, 40, 0, 0))
    stdin = os.fdopen(os.dup(slave), "r")
    stdout = os.fdopen(os.dup(slave), "w")
    try:
        frame = EarlyFrame.show([], {"TERM": "xterm-256color"}, stdin=stdin, stdout=stdout)
        assert frame is not None
        try:
            _drain(master)
            typed = b"hi\x11\x03\r"  # text, Ctrl+Q, Ctrl+C, Enter
            os.write(master, typed)
            assert _read_exactly(slave, len(typed)) == typed
        finally:
            frame.close()
        modes = termios.tcgetattr(slave)  # the terminal's own modes are back
        assert modes[0] & termios.IXON and modes[3] & termios.ISIG
    finally:
        stdin.close()
        stdout.close()
        os.close(slave)
        os.close(master)
