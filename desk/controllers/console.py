"""The console panel (F2) and console commands typed in the prompt box.

Commands run on the gateway's console workers (``console_run``); their output and outcome come
back as ``console.output`` / ``console.complete`` events, which the app hands here whichever
session is shown. The commands the gateway's console knows come from ``console_commands()``
(:meth:`ConsoleController.load_commands`, once the app runs). A command is cancelled as a user
stop (``console.cancel``) by the panel's Cancel button, or by Esc or Ctrl+C while the panel has
the focus: the app's stop keys ask :meth:`ConsoleController.takes_stop_key` first (on the UI
thread) and the terminal's input thread asks :meth:`ConsoleController.stop_from_input_thread`
(see :mod:`desk.driver`), so with the panel focused a stop key cancels the command, not the turn.

A stop key pressed right after the Enter that sends a command cancels that command, whichever
of the two the UI gets to first: the app notes each Enter given to the panel's command line as
it arrives, in the order of the keys (:meth:`ConsoleController.enter_given`), and a stop key
handled while such an Enter is on its way is kept for its command (it stops no turn), which is
cancelled as soon as it runs when the key was made after its Enter (:meth:`~ConsoleController.
entered`). Before, the key raced the command's start across the widgets' queues and was lost
when it came first.

Console commands in the prompt box (``/help``, ``/sessions``, ``/new``, ``/model NAME``,
``digest PATH...``) run the same way, without opening the panel at first: a command whose
answer is one line (``/new``, ``/model``, a refusal) gets that line in the transcript, and the
panel opens (unfocused) only once a command writes a second line. ``/stop`` stops the running
turn as a user stop right away, without the console. The panel keeps every command's entry.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING

from textual.widget import Widget

from agent.stops import StopRequest, Surface
from contract.errors import GatewayError
from contract.events import ConsoleComplete, ConsoleOutput
from contract.results import ConsoleCommandInfo
from desk.controllers.ports import Notify
from desk.controllers.turns import TurnsController
from desk.receipts import format_elapsed
from desk.stop_key import key_stop
from desk.tool_text import stopped_text
from desk.widgets.console_panel import ConsolePanel
from desk.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from contract.ports import DeskGateway
    from desk.controllers.view import ShownSession

NEW_SESSION_LINE = re.compile(r"^new session ([0-9A-Za-z_-]+)\s*$", re.MULTILINE)
"""The line ``/new`` writes when it created a session."""

BARE_COMMANDS = frozenset({"digest"})
"""Commands recognised in the prompt box without a leading ``/`` (a one-line prompt only)."""


def slash_command(text: str, names: Collection[str]) -> str | None:
    """The console command a prompt-box text is, or None when it is a prompt for the model.

    Args:
        text: what the person typed.
        names: the console's command names (``help``, ``sessions``, ``new``, ``stop``...).

    Returns:
        the command name when the text starts with ``/NAME`` of a console command, or is one
        line starting with ``digest``; else None (unknown ``/words`` are left to other
        handlers).
    """
    line = text.strip()
    if not line:
        return None
    word = line.split(maxsplit=1)[0]
    name = word.removeprefix("/")
    if name not in names:
        return None
    if word.startswith("/"):
        return name
    if name in BARE_COMMANDS and "\n" not in line:
        return name
    return None


def outcome_line(status: str, message: str, elapsed_s: float) -> str:
    """The line closing a command's output: ``✓ done in 0.2 s``, ``■ cancelled · ...``."""
    if status == "ok":
        return f"✓ done in {format_elapsed(elapsed_s)}"
    if status == "cancelled":
        return f"■ cancelled · {stopped_text(message)}" if message else "■ cancelled"
    if status == "timeout":
        return f"■ timeout · {message}" if message else "■ timeout"
    return f"✖ {message}" if message else f"✖ {status}"


class ConsoleController:
    """The console panel and console commands.

    Args:
        gateway: the gateway (``console_commands``, ``console_run``, ``console_cancel``).
        panel: the console panel.
        status: the status bar (a ``/model`` shows its model there).
        turns: ``/stop`` stops the running turn.
        show_session: switches the desk to a session (``/new``).
        shown: the view of the session shown now (where a one-line answer goes).
        open_sessions: opens the sessions sidebar (``/sessions``).
        notify: shows a toast.
        refresh_bindings: tells the footer the Stop binding changed (a running command has
            the stop key too).
    """

    def __init__(
        self,
        gateway: DeskGateway,
        *,
        panel: ConsolePanel,
        status: StatusBar,
        turns: TurnsController,
        show_session: Callable[[str], Awaitable[object]],
        shown: Callable[[], ShownSession | None],
        open_sessions: Callable[[], None],
        notify: Notify,
        refresh_bindings: Callable[[], None] = lambda: None,
    ) -> None:
        self._gateway = gateway
        self._refresh_bindings = refresh_bindings
        self._panel = panel
        self._status = status
        self._turns = turns
        self._show_session = show_session
        self._shown = shown
        self._open_sessions = open_sessions
        self._notify = notify
        self.commands: list[ConsoleCommandInfo] = []
        """The commands the gateway's console runs (read once the app runs)."""
        self._names: frozenset[str] = frozenset()
        self._markdown: frozenset[str] = frozenset()  # commands whose output is Markdown
        self._lines: dict[str, str] = {}  # command id -> line, for commands started here
        self._quiet: set[str] = set()  # typed in the prompt box, one line of output so far
        # Read by the input thread: replaced (never mutated) on the UI thread.
        self._running_ids: tuple[str, ...] = ()
        self._focused = False
        self._new_session: dict[str, str] = {}  # command id -> session /new created
        self._idle_keys: list[tuple[float, float]] = []  # (read_at, keyed_at): stopped nothing
        # Enters given to the command line whose command has not reached the controller yet
        # (their key times): read by the input thread, replaced (never mutated) on the UI thread.
        self._enters: tuple[float, ...] = ()
        self._idle_keys_lock = threading.Lock()  # the input thread adds to them

    def load_commands(self) -> list[ConsoleCommandInfo]:
        """Ask the gateway which commands its console runs (once the app runs); returns them."""
        self.commands = self._gateway.console_commands()
        self._names = frozenset(command.name for command in self.commands)
        self._markdown = frozenset(c.name for c in self.commands if getattr(c, "markdown", False))
        return self.commands

    def command_in(self, text: str) -> str | None:
        """The console command a prompt-box text is, or None (see :func:`slash_command`)."""
        return slash_command(text, self._names)

    @property
    def running(self) -> tuple[str, ...]:
        """Ids of the commands started from this desk that still run."""
        return self._running_ids

    @property
    def busy(self) -> bool:
        """True while commands started here run, or an Enter in the command line is on its
        way to start one (the stop key is live for them)."""
        return bool(self._running_ids or self._enters)

    def toggle(self) -> bool:
        """F2: open the console (focused) or close it.

        Returns:
            True when it was closed (the prompt box should get the focus back).
        """
        if self._panel.is_open:
            self._panel.close()
            self._focused = False
            return True
        self._panel.open()
        return False

    # -- running ---------------------------------------------------------------------------------

    def run_line(self, view: ShownSession, line: str, *, focus: bool = True) -> str | None:
        """Run a command line on the gateway's console and show it in the (opened) panel.

        Args:
            view: the session shown (the command runs in it).
            line: the command line.
            focus: focus the panel's command line.

        Returns:
            the command id, or None when the gateway refused it (the panel says why).
        """
        self._panel.open(focus=focus)
        return self._start(view, line)

    def _start(self, view: ShownSession, line: str) -> str | None:
        """Run ``line``; its entry in the panel (open or not) shows it. None: refused (the
        panel says why)."""
        panel = self._panel
        try:
            command_id = self._gateway.console_run(view.session_id, line)
        except GatewayError as exc:
            panel.write_line(f"✖ {exc.message}", command=line)
            return None
        name = self.command_in(line) or ""
        panel.begin(command_id, line, markdown=name in self._markdown)
        self._lines[command_id] = line
        self._changed()
        return command_id

    async def run_typed(
        self, view: ShownSession, text: str, entered_at: float | None = None
    ) -> bool:
        """Run the prompt box's text as a console command when it is one.

        The panel stays as it is: a one-line answer goes to the transcript when the command
        ends; the panel opens once the command writes more. A stop key made after its Enter
        that stopped nothing (the UI had not taken the Enter yet, :meth:`stop_key_missed`)
        cancels it as soon as it runs.

        Args:
            view: the session shown.
            text: the prompt box's text.
            entered_at: when its Enter was made (``Message.time``), or None.

        Returns:
            True when it was a command (it ran, or ``/stop`` stopped); False for a prompt.
        """
        name = self.command_in(text)
        if name is None:
            return False
        if name == "stop":
            self._turns.stop_by_command(view)
            return True
        line = text.strip()
        try:
            command_id = self._gateway.console_run(view.session_id, line)
        except GatewayError as exc:
            self._panel.write_line(f"✖ {exc.message}", command=line)
            await view.add_note(f"{line} — ✖ {exc.message}", error=True, scroll=True)
            return True
        self._panel.begin(command_id, line, markdown=name in self._markdown)
        self._lines[command_id] = line
        self._quiet.add(command_id)
        self._changed()
        self._stop_if_keyed_after(command_id, entered_at)
        if name == "sessions":
            self._open_sessions()
        return True

    def stop_key_missed(self, read_at: float, keyed_at: float) -> None:
        """A stop key that found no turn and no command to stop (or came while a command
        typed in the panel was on its way, :meth:`takes_stop_key`): kept so that a command
        whose Enter came before it, but reached the UI after it (the input thread reads keys
        ahead of the UI, and a key reaches the app before the widgets' messages), is cancelled
        once it runs (:meth:`run_typed`, :meth:`entered`). Kept until the next typed command.
        Thread-safe.

        Args:
            read_at: ``time.monotonic()`` when the key was read.
            keyed_at: the key event's own time (``Message.time``).
        """
        with self._idle_keys_lock:
            self._idle_keys.append((read_at, keyed_at))

    def _stop_if_keyed_after(self, command_id: str, entered_at: float | None) -> None:
        with self._idle_keys_lock:
            keys, self._idle_keys = self._idle_keys, []
        after = [
            read_at
            for read_at, keyed_at in keys
            if entered_at is not None and keyed_at >= entered_at
        ]
        if after:
            self._cancel((command_id,), after[0])

    def enter_given(self, key_time: float) -> None:
        """An Enter reached the app while the panel's command line had the focus (UI thread,
        in the order of the keys, before the keys after it are handled): until its line reaches
        :meth:`entered`, a stop key is for the command it sends (:meth:`takes_stop_key`).

        Args:
            key_time: the Enter's own time (``Message.time``).
        """
        self._enters = (*self._enters, key_time)

    def _landed(self, key_time: float | None) -> None:
        """The Enter of ``key_time`` (None: the oldest) and those before it reached us."""
        if key_time is None:
            self._enters = self._enters[1:]
        else:
            self._enters = tuple(t for t in self._enters if t > key_time)

    def entered(self, view: ShownSession | None, line: str, key_time: float | None = None) -> None:
        """A line typed in the panel: ``/stop`` stops the turn, anything else runs; a stop key
        made after its Enter that found the command not started yet cancels it now.

        Args:
            view: the session shown (None: none is, nothing runs).
            line: the line ("" for an Enter on an empty line: nothing runs).
            key_time: when its Enter was made (``Message.time``), or None.
        """
        self._landed(key_time)
        if view is None or not line:
            return
        name = self.command_in(line)
        if name == "stop":
            self._panel.write_line("", command=line)
            self._turns.stop_by_command(view)
            return
        command_id = self.run_line(view, line)
        if command_id is not None:
            self._stop_if_keyed_after(command_id, key_time)
        if name == "sessions":
            self._open_sessions()

    # -- cancelling ------------------------------------------------------------------------------

    def cancel_all(self) -> int:
        """Cancel every command this desk started that still runs (a user stop).

        Returns:
            how many were cancelled.
        """
        return self._cancel(self._running_ids)

    def _cancel(self, command_ids: tuple[str, ...], read_at: float | None = None) -> int:
        surface = Surface.CONSOLE_CANCEL
        stop = StopRequest.by_user(surface) if read_at is None else key_stop(read_at, surface)
        return sum(self._gateway.console_cancel(command_id, stop) for command_id in command_ids)

    def takes_stop_key(self, read_at: float | None = None, keyed_at: float | None = None) -> bool:
        """A stop key while the console has the focus: cancel its commands that run, and the
        one an Enter on its way sends, once it runs (:meth:`enter_given`). Thread-safe.

        Args:
            read_at: ``time.monotonic()`` when the key was read (None: now).
            keyed_at: the key event's own time (``Message.time``; None: now).

        Returns:
            True when the key is the console's (the turn is left alone).
        """
        running, entering = self._running_ids, self._enters
        if not (self._focused and (running or entering)):
            return False
        if running:
            self._cancel(running, read_at)
        if entering:  # its command is cancelled as soon as it runs
            now = time.monotonic()
            self.stop_key_missed(
                now if read_at is None else read_at, now if keyed_at is None else keyed_at
            )
        return True

    def cancel_running(self, read_at: float | None = None) -> bool:
        """A stop key that stopped no turn: cancel the commands this desk started that still
        run, wherever the focus is (a ``digest`` typed in the prompt box has a stop key too).
        Thread-safe: reads one attribute and calls the gateway.

        Args:
            read_at: ``time.monotonic()`` when the key was read (None: now).

        Returns:
            True when commands ran and were cancelled (the key is consumed).
        """
        running = self._running_ids
        if not running:
            return False
        self._cancel(running, read_at)
        return True

    def stop_from_input_thread(
        self, read_at: float | None = None, keyed_at: float | None = None
    ) -> bool:
        """A stop key on the terminal's input thread (thread-safe: reads attributes).

        Args:
            read_at: ``time.monotonic()`` when the key was read (None: now).
            keyed_at: the key event's own time (``Message.time``; None: now).

        Returns:
            True when the console has the focus and commands ran (they were cancelled) or
            one is on its way (see :meth:`takes_stop_key`): the key is consumed.
        """
        return self.takes_stop_key(read_at, keyed_at)

    def focus_moved(self, focused: Widget | None) -> None:
        """The focus moved to ``focused``: note whether it is inside the panel."""
        node = focused
        while node is not None and not isinstance(node, ConsolePanel):
            parent = node.parent
            node = parent if isinstance(parent, Widget) else None
        self._focused = node is not None

    def _changed(self) -> None:
        self._running_ids = tuple(self._lines)
        self._panel.running = len(self._running_ids)
        self._refresh_bindings()

    # -- gateway events ------------------------------------------------------------------------

    def output(self, payload: ConsoleOutput) -> None:
        """``console.output`` of a command started here (a command typed in the prompt box
        opens the panel once it writes a second line)."""
        if payload.command_id not in self._lines:
            return
        panel = self._panel
        panel.write_to(payload.command_id, payload.text)
        found = NEW_SESSION_LINE.search(payload.text)
        if found is not None:  # ``/new``'s own report: a fallback if focus_session is lost
            self._new_session[payload.command_id] = found.group(1)
        entry = panel.entry(payload.command_id)
        lines = entry.output.strip("\n").count("\n") + 1 if entry is not None else 0
        if payload.command_id in self._quiet and lines > 1:  # the console shows the rest
            self._quiet.discard(payload.command_id)
            panel.open(focus=False)

    async def ended(self, view: ShownSession | None, payload: ConsoleComplete) -> None:
        """``console.complete``: the outcome line; ``/new`` switches the desk to its session;
        a command typed in the prompt box that answered in one line says it in the transcript.

        Args:
            view: the session shown now (None while none is).
            payload: the event.
        """
        p = payload
        created = self._new_session.pop(p.command_id, None)
        quiet = p.command_id in self._quiet
        self._quiet.discard(p.command_id)
        if self._lines.pop(p.command_id, None) is None:
            return  # not started from this desk
        self._changed()
        entry = self._panel.entry(p.command_id)
        answer = " ".join(entry.output.split()) if entry is not None else ""
        self._panel.finish(p.command_id, outcome_line(p.status, p.message, p.elapsed_s))
        words = p.line.split()
        if p.status == "ok" and self.command_in(p.line) == "model" and len(words) == 2:
            self._status.model = words[1]  # the session's new model
        target = p.focus_session or created
        if view is None or not view.is_attached:  # none shown, or the app exits
            return
        if target is not None and target != view.session_id:
            # Switch whatever the status: a /new that created its session and was then
            # cancelled or timed out still made the session the person asked for.
            await self._show_session(target)
        shown = self._shown()
        if quiet and shown is not None and shown.is_attached:
            await shown.add_note(answer_line(p, answer), error=p.status != "ok", scroll=True)


def answer_line(payload: ConsoleComplete, answer: str) -> str:
    """The transcript's line for a command that answered in one line: ``/model x — this
    session now uses model x``, ``/model — ✖ usage: /model NAME``, ``/x — ✓ done``."""
    if payload.status == "ok":
        said = answer or "✓ done"
    else:
        outcome = outcome_line(payload.status, payload.message, payload.elapsed_s)
        said = f"{answer} · {outcome}" if answer else outcome
    return f"{payload.line.strip()} — {said}"
