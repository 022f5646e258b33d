"""Ctrl+G: the prompt box's text in the person's editor (``$VISUAL``, else ``$EDITOR``).

The text is written to a private temporary file, the app is suspended (the terminal is the
editor's while it runs; a terminal that cannot be suspended, as in a headless run, runs the
editor all the same) and the editor is run on the file. When it exits with 0 the file's text
replaces the box's (one trailing newline, which editors add, is dropped); when it fails, cannot
be started, or none is set, a toast says so and the box keeps its text.

Ctrl+G is a priority binding: it runs as the key reaches the app, while the keys typed just
before it (``burst⏎``-fast, or sent in one write) may still wait in the prompt box's queue. The
editor then got the box without them, and they were typed into the editor's text afterwards. So
the key only queues the editor where those keys went (the focused widget, else the screen),
behind them and ahead of the keys typed after it: the editor opens on the text typed before
Ctrl+G, and what was typed after it follows the editor's text.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from pathlib import Path

from textual.app import SuspendNotSupported

from desk.controllers.ports import Notify
from desk.shutdown import quit_signals_at_once
from desk.widgets.prompt_input import PromptInput

Suspend = Callable[[], AbstractContextManager[None]]
"""``App.suspend``: hands the terminal over while the editor runs."""


def editor_command(env: Mapping[str, str]) -> list[str] | None:
    """The editor's command line: ``$VISUAL``, else ``$EDITOR`` (split like a shell would), or
    None when neither is set (or it cannot be parsed)."""
    for name in ("VISUAL", "EDITOR"):
        value = env.get(name, "").strip()
        if value:
            try:
                words = shlex.split(value)
            except ValueError:
                return None
            return words or None
    return None


class EditorController:
    """Runs the person's editor on the prompt box's text.

    Args:
        prompt: the prompt box.
        suspend: the app's ``suspend`` (the terminal is the editor's meanwhile).
        notify: shows a toast.
        env: where ``VISUAL`` and ``EDITOR`` are read (the process's environment by default).
        quit_now: starts the quit from a signal handler (thread-safe, idempotent): SIGTERM or
            SIGHUP while the editor runs stops every turn at once, and the editor is ended.
        quit_over: blocks until that quit is done (it ends the process from its own thread,
            or hands the exit back to the UI thread): the desk does not take the terminal
            back meanwhile (taking it back raced with the quit giving it back, and the quit
            hung about once in ten tries under load).
    """

    def __init__(
        self,
        prompt: PromptInput,
        suspend: Suspend,
        notify: Notify,
        env: Mapping[str, str] | None = None,
        quit_now: Callable[[], object] = lambda: None,
        quit_over: Callable[[], object] = lambda: None,
    ) -> None:
        self._prompt = prompt
        self._suspend = suspend
        self._notify = notify
        self._env = env
        self._quit_now = quit_now
        self._quit_over = quit_over

    def edit(self) -> bool:
        """Open the box's text in the editor and take back what was saved.

        Returns:
            True when the box now holds the editor's text; False when it kept its own (the
            toast says why).
        """
        env = self._env if self._env is not None else os.environ
        command = editor_command(env)
        if command is None:
            self._notify(
                "set $VISUAL or $EDITOR to write the prompt in your editor",
                title="No editor",
                severity="warning",
            )
            return False
        with _scratch(self._prompt.text) as path:
            try:
                done = self._run([*command, str(path)])
            except OSError as exc:
                self._fail(f"cannot start {command[0]}: {exc.strerror or exc}")
                return False
            if done.returncode != 0:
                self._fail(f"{command[0]} exited with {done.returncode}")
                return False
            try:
                text = path.read_bytes().decode("utf-8", errors="replace")
            except OSError as exc:
                self._fail(f"cannot read what {command[0]} saved: {exc.strerror or exc}")
                return False
        text = text[:-1] if text.endswith("\n") else text
        self._prompt.text = text
        self._prompt.move_cursor(self._prompt.document.end)
        self._prompt.focus()
        return True

    def _run(self, argv: list[str]) -> subprocess.CompletedProcess[bytes]:
        """Run the editor with the terminal handed over (OSError: it cannot be started)."""
        try:
            with self._suspend():
                return self._wait(argv)
        except SuspendNotSupported:  # a headless run: there is no terminal to hand over
            return self._wait(argv)

    def _wait(self, argv: list[str]) -> subprocess.CompletedProcess[bytes]:
        """Run the editor to its end; a quit signal meanwhile starts the quit and ends it."""
        running: list[subprocess.Popen[bytes]] = []  # the editor, once started
        quitting = threading.Event()

        def quit_signal(_sig: signal.Signals) -> None:
            quitting.set()
            Path(argv[-1]).unlink(missing_ok=True)  # the scratch file: the quit ends the process
            self._quit_now()
            for editor in running:
                editor.terminate()

        with quit_signals_at_once(quit_signal):  # before the start: a signal may come at once
            editor = subprocess.Popen(argv)
            running.append(editor)
            if quitting.is_set():
                editor.terminate()
            while True:
                # Polled, not one blocking wait: the kernel may hand the signal to another of
                # desk's threads, and a main thread blocked in waitpid() would not run its
                # handler until the editor exited
                with contextlib.suppress(subprocess.TimeoutExpired):
                    code = editor.wait(timeout=3600.0)
                    break
        if quitting.is_set():
            self._quit_over()  # still suspended: the quit gives the terminal back, and ends
        return subprocess.CompletedProcess(argv, code)

    def _fail(self, why: str) -> None:
        self._notify(f"{why}; the prompt box keeps its text", title="Editor", severity="error")


@contextlib.contextmanager
def _scratch(text: str) -> Iterator[Path]:
    """A private temporary ``.md`` file holding ``text``, removed afterwards."""
    handle, name = tempfile.mkstemp(prefix="desk-prompt-", suffix=".md")
    path = Path(name)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        yield path
    finally:
        path.unlink(missing_ok=True)
