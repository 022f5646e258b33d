"""Esc through a real pseudo-terminal: key press -> the model server sees the connection close.

Runs the real ``desk`` (the console script, or ``python -m desk``) in a pty with
TERM=xterm-256color at 120x40, against a demo model server in this process (so its request
records, stamped with ``time.monotonic()``, are read directly). Pilot bypasses the terminal
driver; this test does not, so it covers the escape-delay fix in :mod:`desk.driver`.
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
import termios
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from agent.store import SqliteStore
from demo_model.records import RequestRecord
from demo_model.server import DemoModelServer
from tests.support import cut_short, poll_until, running_demo

pytestmark = [
    pytest.mark.pty,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux pty driver test"),
]


class PtyScreen:
    """Owns a pty master: drains it on a thread (so the app never blocks on output), keeps all.

    Args:
        master_fd: the pty master; closed by :meth:`close` (or :meth:`hang_up`).
    """

    def __init__(self, master_fd: int) -> None:
        self._fd = master_fd
        self._data = bytearray()
        self._cond = threading.Condition()
        self._closing = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._read, name="pty-reader", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._closing.is_set():
            ready, _, _ = select.select([self._fd], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(self._fd, 65536)
            except OSError:
                chunk = b""
            with self._cond:
                if not chunk:
                    break
                self._data += chunk
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def write(self, data: bytes) -> None:
        """Type ``data`` (as the terminal would send it)."""
        os.write(self._fd, data)

    def hang_up(self) -> None:
        """Close the terminal like a closed window: stop reading, then close the master."""
        self.close()

    def close(self) -> None:
        """Stop the reader and close the master (idempotent)."""
        if self._closed:
            return
        self._closing.set()
        self._thread.join(5.0)
        os.close(self._fd)
        self._closed = True

    def wait_for(self, needle: bytes, timeout_s: float, start: int = 0) -> int:
        """Wait until ``needle`` appears after byte ``start``; returns where it ends."""
        with self._cond:
            found = self._cond.wait_for(
                lambda: needle in self._data[start:] or not self._thread.is_alive(), timeout_s
            )
            at = self._data.find(needle, start)
            if not found or at < 0:
                tail = bytes(self._data[-600:])
                raise AssertionError(f"{needle!r} not on screen in {timeout_s} s; tail: {tail!r}")
            return at + len(needle)

    def tail(self, size: int = 2000) -> bytes:
        """The last ``size`` bytes read (for failure messages)."""
        with self._cond:
            return bytes(self._data[-size:])

    def since(self, start: int) -> bytes:
        """Every byte read after byte ``start``."""
        with self._cond:
            return bytes(self._data[start:])

    @property
    def size(self) -> int:
        """Bytes read so far."""
        with self._cond:
            return len(self._data)


def desk_command() -> list[str]:
    """The installed ``desk`` script next to this interpreter, else ``python -m desk``."""
    script = Path(sys.executable).with_name("desk")
    if script.exists():
        return [str(script)]
    found = shutil.which("desk")
    return [found] if found else [sys.executable, "-m", "desk"]


@pytest.fixture
def pty_server() -> Iterator[DemoModelServer]:
    with running_demo(30) as server:
        yield server


@contextmanager
def desk_in_pty(
    server: DemoModelServer,
    extra_env: dict[str, str] | None = None,
    *,
    cwd: Path | None = None,
    extra_args: Sequence[str] = (),
    typed_ahead: bytes = b"",
) -> Iterator[tuple[subprocess.Popen[bytes], PtyScreen]]:
    """Run desk in a 120x40 pty against ``server`` until it shows it is ready (in ``cwd``,
    with ``extra_args`` after the server flags; ``typed_ahead`` written at once, while the
    terminal still cooks its input, as a person types ahead of a starting program).

    Yields:
        the process and its screen (type with ``screen.write``). On exit a process still
        alive is killed (its own session) and the pty closed.
    """
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEXTUAL", "ESCDELAY"))}
    env.update({"TERM": "xterm-256color", "COLORTERM": "truecolor"}, **(extra_env or {}))
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    command = [*desk_command(), "--base-url", server.base_url, "--model", "demo", *extra_args]
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
        close_fds=True,
    )
    os.close(slave)
    if typed_ahead:
        os.write(master, typed_ahead)
    screen = PtyScreen(master)
    try:
        screen.wait_for(b"idle", timeout_s=20.0)
        yield proc, screen
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5.0)
        screen.close()


def start_streaming(server: DemoModelServer, screen: PtyScreen) -> RequestRecord:
    """Type a prompt and Enter; return the server's record once tokens flow."""
    before = len(server.records.list())
    screen.write(b"Tell me about stopping streams\r")
    record = server.records.wait_for_record(
        lambda r: r.id > before and r.tokens_generated >= 3, timeout=10.0
    )
    assert record is not None, "the prompt never reached the server"
    return record


def closed_at(server: DemoModelServer, record: RequestRecord) -> float:
    """When the server saw the client close the request's connection."""
    closed = server.records.wait_for_record(
        lambda r: r.id == record.id and r.peer_closed_at is not None, timeout=5.0
    )
    assert closed is not None and closed.peer_closed_at is not None, "no close seen"
    return closed.peer_closed_at


def run_desk_and_stop(server: DemoModelServer, extra_env: dict[str, str] | None = None) -> float:
    """Start desk in a pty, stream a reply, press Esc, quit with Ctrl+Q (exit code 0).

    Returns:
        seconds from writing the ESC byte to the server noticing the closed connection.
    """
    with desk_in_pty(server, extra_env) as (proc, screen):
        record = start_streaming(server, screen)
        t_esc = time.monotonic()
        screen.write(b"\x1b")
        latency = closed_at(server, record) - t_esc
        screen.wait_for(b"stopped by you", timeout_s=5.0)
        screen.write(b"\x11")  # Ctrl+Q
        assert proc.wait(timeout=10.0) == 0
        return latency


def test_esc_closes_the_model_connection_fast_through_a_real_pty(
    pty_server: DemoModelServer,
    record_property: pytest.RecordProperty,
    private_xdg_dirs: dict[str, Path],
) -> None:
    latency = run_desk_and_stop(pty_server)
    # The desk saved the session in this test's own data folder, not the person's.
    assert (private_xdg_dirs["XDG_DATA_HOME"] / "desk" / "desk.db").is_file()
    record_property("esc_to_server_close_ms", round(latency * 1000.0, 1))  # a figure, not a test
    assert latency >= 0.0
    cut_short(pty_server)  # the close, not the reply's end, ended the request


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_quit_signal_while_streaming_is_a_system_quit(
    pty_server: DemoModelServer, sig: signal.Signals
) -> None:
    with desk_in_pty(pty_server) as (proc, screen):
        record = start_streaming(pty_server, screen)
        mark = screen.size
        proc.send_signal(sig)
        code = proc.wait(timeout=10.0)
        assert code == 0, f"exit code {code}; screen tail: {screen.tail()!r}"
        assert closed_at(pty_server, record) >= record.started_at
        screen.wait_for(b"\x1b[?1049l", timeout_s=5.0, start=mark)  # left the alternate screen


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_quit_signal_while_the_editor_is_open_stops_the_turn_at_once(
    pty_server: DemoModelServer, tmp_path: Path, sig: signal.Signals
) -> None:
    # The UI thread waits for the editor (Ctrl+G), and so did the loop's signal handler: the
    # turn went on streaming until the editor exited (10 s and more in a tester's tries)
    started = tmp_path / "editor.pid"
    editor = tmp_path / "slow-editor.sh"
    opened = tmp_path / "editor.arg"
    editor.write_text(f'#!/bin/sh\necho "$1" > {opened}\necho $$ > {started}\nexec sleep 300\n')
    editor.chmod(0o755)
    with desk_in_pty(pty_server, {"VISUAL": str(editor)}) as (proc, screen):
        record = start_streaming(pty_server, screen)
        screen.write(b"\x07")  # Ctrl+G
        assert poll_until(lambda: started.exists() and started.read_text().strip(), 20.0)
        pid = int(started.read_text())
        proc.send_signal(sig)
        assert closed_at(pty_server, record) >= record.started_at
        assert proc.wait(timeout=15.0) == 0
    assert poll_until(lambda: not Path(f"/proc/{pid}").exists(), 10.0)  # the editor ended too
    draft = Path(opened.read_text().strip())
    assert draft.name.startswith("desk-prompt-") and not draft.exists()  # no draft left in /tmp


def test_terminal_hang_up_while_streaming_quits_cleanly(pty_server: DemoModelServer) -> None:
    with desk_in_pty(pty_server) as (proc, screen):
        record = start_streaming(pty_server, screen)
        screen.hang_up()  # the window closed: reads give end-of-file, writes fail
        assert proc.wait(timeout=10.0) == 0
        assert closed_at(pty_server, record) >= record.started_at


def test_quitting_after_a_turn_says_how_to_resume_the_session(
    pty_server: DemoModelServer, private_xdg_dirs: dict[str, Path]
) -> None:
    with desk_in_pty(pty_server) as (proc, screen):
        screen.write(b"reply with exactly: kept for later\r")
        screen.wait_for(b"kept for later", timeout_s=20.0)
        assert pty_server.records.wait_for(lambda rs: bool(rs) and rs[-1].finished, 20)
        mark = screen.size
        screen.write(b"\x11")  # Ctrl+Q
        assert proc.wait(timeout=15.0) == 0
        left = screen.wait_for(b"\x1b[?1049l", timeout_s=5.0, start=mark)
        screen.wait_for(b"desk --resume", timeout_s=5.0, start=left)
        after = screen.since(left).decode("utf-8", errors="replace")
    with SqliteStore(private_xdg_dirs["XDG_DATA_HOME"] / "desk" / "desk.db") as saved:
        (session,) = saved.sessions.list_sessions()
    assert f"to resume this session: desk --resume {session.id}" in after


def test_ctrl_q_while_streaming_gives_the_terminal_back_and_draws_nothing_after(
    pty_server: DemoModelServer,
) -> None:
    # The quit leaves from its own thread once all is saved; the UI thread, still drawing the
    # stream, must not paint a frame on the person's own screen after the terminal is back.
    # an endless document cut at 20,000 tokens: 10 s, still streaming when the quit lands (the
    # Markdown reply to this prompt is some 240 tokens: over before a busy machine reads Ctrl+Q)
    pty_server.configure(tokens_per_second=2000.0, max_tokens=20_000, reply_shape="document")
    with desk_in_pty(pty_server) as (proc, screen):
        record = start_streaming(pty_server, screen)
        mark = screen.size
        screen.write(b"\x11")  # Ctrl+Q
        assert proc.wait(timeout=15.0) == 0, f"screen tail: {screen.tail()!r}"
        assert closed_at(pty_server, record) >= record.started_at
        left = screen.wait_for(b"\x1b[?1049l", timeout_s=5.0, start=mark)
        screen.wait_for(b"desk --resume", timeout_s=5.0, start=left)
        after = screen.since(left).replace(b"\x1b[?25h", b"").replace(b"\x1b[?1004l", b"")
    assert b"\x1b" not in after, f"drawn after the terminal was given back: {after!r}"
    assert after.strip().startswith(b"to resume this session: desk --resume ")


def test_esc_and_words_after_it_in_one_write_stop_the_reply_and_type_the_words(
    pty_server: DemoModelServer,
) -> None:
    # a busy machine reads Esc and the next words at once: "and then" must not be Alt+a
    with desk_in_pty(pty_server) as (proc, screen):
        record = start_streaming(pty_server, screen)
        screen.write(b"\x1band then")
        closed_at(pty_server, record)
        screen.wait_for(b"stopped by you", timeout_s=10.0)
        screen.wait_for(b"and then", timeout_s=10.0)
        screen.write(b"\x11")  # Ctrl+Q
        assert proc.wait(timeout=10.0) == 0
    cut_short(pty_server)


def test_a_prompt_sent_in_the_same_burst_as_ctrl_q_is_saved(
    pty_server: DemoModelServer, private_xdg_dirs: dict[str, Path]
) -> None:
    # Enter then Ctrl+Q in one read: the quit starts on the input thread while the Enter still
    # waits in the UI's queue; the prompt must be saved, stopped by the quit or not sent
    with desk_in_pty(pty_server) as (proc, screen):
        mark = screen.size
        screen.write(b"reply with exactly: ready\r")  # the desk is up, a turn has run
        screen.wait_for(b"ready", timeout_s=20.0, start=mark)
        assert pty_server.records.wait_for(lambda rs: bool(rs) and rs[-1].finished, 20)
        screen.wait_for(b"idle", timeout_s=20.0, start=screen.size)  # idle again
        screen.write(b"burst then quit\r\x11")
        assert proc.wait(timeout=15.0) == 0
    with SqliteStore(private_xdg_dirs["XDG_DATA_HOME"] / "desk" / "desk.db") as saved:
        (session,) = saved.sessions.list_sessions()
        burst = [t for t in saved.turns.list_turns(session.id) if t.prompt == "burst then quit"]
    (turn,) = burst
    assert (turn.stop_issuer, turn.stop_surface) == ("system", "gateway.shutdown")


def test_esc_with_the_help_open_stops_the_reply_and_closes_the_help(
    pty_server: DemoModelServer,
) -> None:
    with desk_in_pty(pty_server) as (proc, screen):
        record = start_streaming(pty_server, screen)
        screen.write(b"\x1bOP")  # F1
        opened = screen.wait_for(b"Esc / F1 closes", timeout_s=10.0)
        screen.write(b"\x1b")
        closed_at(pty_server, record)
        screen.wait_for(b"stopped by you", timeout_s=10.0, start=opened)
        screen.write(b"typed after")  # the help closed: the words reach the prompt box
        screen.wait_for(b"typed after", timeout_s=10.0, start=opened)
        screen.write(b"\x11")  # Ctrl+Q
        assert proc.wait(timeout=10.0) == 0
    cut_short(pty_server)
