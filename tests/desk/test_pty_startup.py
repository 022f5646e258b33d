"""Starting the real ``desk`` in a pseudo-terminal: without a server, and fast.

The desk opens whatever the model server does: a server that cannot be reached is one line on
screen and is asked again in the background until it answers, then prompts go; keys typed
while the desk starts are kept for the prompt box; the terminal gets its own modes back at
exit. Pilot bypasses the terminal and the entry point; these tests do not.
"""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import socket
import struct
import subprocess
import sys
import termios
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.desk.test_pty_stop import PtyScreen, desk_command
from tests.support import running_demo

pytestmark = [
    pytest.mark.pty,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux pty test"),
]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def desk_started(
    args: Sequence[str], home: Path
) -> Iterator[tuple[subprocess.Popen[bytes], PtyScreen, int]]:
    """``desk ARGS`` in a 120x40 pty with its own config and data folders under ``home``;
    yields at once (before anything is painted) with the process, its screen and the pty's
    master (to read the terminal's modes)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEXTUAL", "ESCDELAY"))}
    env.update(
        TERM="xterm-256color",
        COLORTERM="truecolor",
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
    )
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    proc = subprocess.Popen(
        [*desk_command(), *args],
        cwd=home,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
        close_fds=True,
    )
    screen = PtyScreen(master)
    try:
        yield proc, screen, slave
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5.0)
        screen.close()
        os.close(slave)


def test_the_desk_opens_without_a_server_and_sends_once_the_server_answers(
    tmp_path: Path,
) -> None:
    port = closed_port()
    url = f"http://127.0.0.1:{port}/v1"
    with desk_started(["--base-url", url, "--model", "demo"], tmp_path) as (proc, screen, tty):
        screen.wait_for(b"idle", timeout_s=20.0)
        screen.wait_for("server unreachable · retrying".encode(), timeout_s=20.0)
        screen.wait_for(f"cannot reach the model server at {url}".encode(), timeout_s=5.0)
        assert proc.poll() is None  # it runs: no exit with code 2

        with running_demo(0, port=port) as server:  # nothing is typed: the desk asks again
            mark = screen.size
            screen.wait_for(b"answers: prompts go", timeout_s=30.0, start=mark)
            screen.write(b"reply with exactly: sent once it answered\r")
            record = server.records.wait_for_record(lambda r: r.completed_at is not None, 10.0)
            assert record is not None
            assert record.messages[-1]["content"] == "reply with exactly: sent once it answered"
            screen.write(b"\x11")  # Ctrl+Q
            assert proc.wait(timeout=15.0) == 0
        modes = termios.tcgetattr(tty)  # echo and line editing are back for the shell
        assert modes[3] & termios.ECHO and modes[3] & termios.ICANON


def test_keys_typed_while_the_desk_starts_are_kept_for_the_prompt_box(tmp_path: Path) -> None:
    with running_demo(0) as server:
        args = ["--base-url", server.base_url, "--model", "demo"]
        with desk_started(args, tmp_path) as (proc, screen, _tty):
            screen.write(b"reply with exactly: typed early")  # before anything is painted
            screen.wait_for(b"Ask anything", timeout_s=10.0)  # the first frame
            screen.wait_for(b"idle", timeout_s=20.0)  # the app's
            screen.wait_for(b"typed early", timeout_s=10.0)  # in the prompt box
            screen.write(b"\r")
            record = server.records.wait_for_record(lambda r: r.completed_at is not None, 10.0)
            assert record is not None
            assert record.messages[-1]["content"] == "reply with exactly: typed early"
            screen.write(b"\x11")
            assert proc.wait(timeout=15.0) == 0


def test_a_refused_key_is_one_line_and_the_desk_stays_open(tmp_path: Path) -> None:
    with running_demo(30.0, api_key="right") as server:
        args = ["--base-url", server.base_url, "--model", "demo", "--api-key", "wrong"]
        with desk_started(args, tmp_path) as (proc, screen, _tty):
            screen.wait_for(b"server refused the key (401)", timeout_s=20.0)
            screen.wait_for(b"refused the API key (401): set OPENAI_API_KEY", timeout_s=5.0)
            screen.write(b"\x11")
            assert proc.wait(timeout=15.0) == 0


def test_an_enter_typed_while_the_desk_starts_sends_the_prompt_once_it_is_ready(
    tmp_path: Path,
) -> None:
    with running_demo(0) as server:
        args = ["--base-url", server.base_url, "--model", "demo"]
        with desk_started(args, tmp_path) as (proc, screen, _tty):
            screen.wait_for(b"Ask anything", timeout_s=10.0)  # the first frame, not the app
            screen.write(b"reply with exactly: entered early\r")
            record = server.records.wait_for_record(lambda r: r.completed_at is not None, 30.0)
            assert record is not None
            assert record.messages[-1]["content"] == "reply with exactly: entered early"
            screen.wait_for(b"idle", timeout_s=20.0)
            screen.write(b"\x11")
            assert proc.wait(timeout=15.0) == 0
        chats = [r for r in server.records.list() if "chat" in r.path]
        assert len(chats) == 1  # sent once


def test_a_ctrl_q_typed_while_the_desk_starts_quits_once_it_is_up(tmp_path: Path) -> None:
    with running_demo(0) as server:
        args = ["--base-url", server.base_url, "--model", "demo"]
        with desk_started(args, tmp_path) as (proc, screen, tty):
            screen.wait_for(b"Ask anything", timeout_s=10.0)  # the first frame, not the app
            screen.write(b"\x11")  # Ctrl+Q
            assert proc.wait(timeout=30.0) == 0
            modes = termios.tcgetattr(tty)  # flow control and Ctrl+C's signal are back
            assert modes[0] & termios.IXON and modes[3] & termios.ISIG


def test_a_ctrl_c_typed_while_the_desk_starts_is_a_first_ctrl_c_once_it_is_up(
    tmp_path: Path,
) -> None:
    with running_demo(0) as server:
        args = ["--base-url", server.base_url, "--model", "demo"]
        with desk_started(args, tmp_path) as (proc, screen, _tty):
            screen.wait_for(b"Ask anything", timeout_s=10.0)  # the first frame, not the app
            screen.write(b"\x03")  # Ctrl+C: not an exit with 130, nor a signal to the shell
            screen.wait_for(b"idle", timeout_s=20.0)
            screen.wait_for(b"press Ctrl+C again to quit", timeout_s=20.0)
            assert proc.poll() is None
            screen.write(b"\x11")
            assert proc.wait(timeout=15.0) == 0
