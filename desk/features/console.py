"""The console panel (F2) and slash commands typed in the prompt box.

Commands run on the gateway's console workers (``console_run``); their output and outcome come
back as ``console.output`` / ``console.complete`` events. A command is cancelled as a user stop
(``console.cancel``) by the panel's Cancel button, or by Esc or Ctrl+C while the panel has the
focus: the app's stop keys ask :meth:`ConsoleFeature.console_takes_stop_key` first (on the UI
thread) and the terminal's input thread asks :meth:`ConsoleFeature.console_stop_from_input_thread`
(see :mod:`desk.driver`), so with the panel focused a stop key cancels the command, not the turn.

Slash commands in the prompt box (``/help``, ``/sessions``, ``/new``, ``/model NAME``,
``digest PATH...``) run the same way and open the panel; ``/stop`` stops the running turn as a
user stop right away, without the console.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from textual import events
from textual.app import ScreenStackError
from textual.binding import Binding, BindingType
from textual.widget import Widget

from agent.stops import StopRequest, Surface
from desk.activity_messages import ConsoleCommandEnded, ConsoleOutputArrived
from desk.features.base import DeskBase
from desk.receipts import format_elapsed
from desk.tool_text import stopped_text
from desk.widgets.console_panel import ConsolePanel
from desk.widgets.prompt_input import PromptInput
from desk.widgets.status_bar import StatusBar
from tui_gateway.console.commands import COMMANDS
from tui_gateway.types import GatewayError

NEW_SESSION_LINE = re.compile(r"^new session ([0-9A-Za-z_-]+)\s*$", re.MULTILINE)
"""The line ``/new`` writes when it created a session."""

BARE_COMMANDS = frozenset({"digest"})
"""Commands recognised in the prompt box without a leading ``/`` (a one-line prompt only)."""


def slash_command(text: str) -> str | None:
    """The console command a prompt-box text is, or None when it is a prompt for the model.

    Args:
        text: what the person typed.

    Returns:
        the command name (``help``, ``sessions``, ``new``, ``stop``, ``model``, ``digest``) when
        the text starts with ``/NAME`` of a console command, or is one line starting with
        ``digest``; else None (unknown ``/words`` are left to other handlers).
    """
    line = text.strip()
    if not line:
        return None
    word = line.split(maxsplit=1)[0]
    name = word.removeprefix("/")
    if name not in COMMANDS:
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


class ConsoleFeature(DeskBase):
    """The console panel and slash commands (a part of :class:`desk.app.DeskApp`)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f2", "toggle_console", "Console", priority=True),
    ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._console_lines: dict[str, str] = {}
        # Read by the input thread: replaced (never mutated) on the UI thread.
        self._console_running_ids: tuple[str, ...] = ()
        self._console_focused = False
        self._console_new_session: dict[str, str] = {}  # command id -> session /new created

    @property
    def console_panel(self) -> ConsolePanel:
        """The console panel."""
        return self.query_one("#console", ConsolePanel)

    @property
    def console_running(self) -> tuple[str, ...]:
        """Ids of the commands started from this desk that still run."""
        return self._console_running_ids

    def action_toggle_console(self) -> None:
        """F2: open the console (focused) or close it (the prompt box gets the focus back)."""
        panel = self.console_panel
        if panel.is_open:
            panel.close()
            self._console_focused = False
            self.focus_prompt()
        else:
            panel.open()

    # -- running ---------------------------------------------------------------------------------

    def run_console_line(self, line: str, *, focus: bool = True) -> str | None:
        """Run a command line on the gateway's console and show it in the (opened) panel.

        Args:
            line: the command line.
            focus: focus the panel's command line.

        Returns:
            the command id, or None when the gateway refused it (the panel says why).
        """
        panel = self.console_panel
        panel.open(focus=focus)
        panel.write_line(f"› {line}")
        if self._session_id is None:
            return None
        try:
            command_id = self.gateway.console_run(self._session_id, line)
        except GatewayError as exc:
            panel.write_line(f"✖ {exc.message}")
            return None
        self._console_lines[command_id] = line
        self._console_changed()
        return command_id

    def run_slash_command(self, text: str) -> bool:
        """Run the prompt box's text as a console command when it is one.

        Returns:
            True when it was a command (it ran, or ``/stop`` stopped); False for a prompt.
        """
        name = slash_command(text)
        if name is None:
            return False
        self.query_one(PromptInput).clear()
        if name == "stop":
            self._stop_from_command()
            return True
        self.run_console_line(text.strip(), focus=False)
        if name == "sessions":
            self.open_sessions()
        return True

    def _stop_from_command(self) -> None:
        session_id, turn_id = self._session_id, self._running_turn
        stopped = None
        if session_id is not None and turn_id is not None:
            stop = StopRequest.by_user(Surface.DESK_KEY, "stopped with /stop")
            stopped = self.gateway.session_interrupt(session_id, stop, turn_id=turn_id)
        if stopped is None:
            self.notify("nothing is running", title="/stop")

    # -- cancelling ------------------------------------------------------------------------------

    def cancel_console_commands(self) -> int:
        """Cancel every command this desk started that still runs (a user stop).

        Returns:
            how many were cancelled.
        """
        return self._cancel(self._console_running_ids)

    def _cancel(self, command_ids: tuple[str, ...]) -> int:
        stop = StopRequest.by_user(Surface.CONSOLE_CANCEL)
        return sum(self.gateway.console_cancel(command_id, stop) for command_id in command_ids)

    def console_takes_stop_key(self) -> bool:
        """Esc / Ctrl+C on the UI thread: cancel the console's commands if it has the focus.

        Returns:
            True when the key cancelled console commands (the turn is left alone).
        """
        if not (self._console_focused and self._console_running_ids):
            return False
        self.cancel_console_commands()
        return True

    def console_stop_from_input_thread(self) -> bool:
        """Esc / Ctrl+C on the terminal's input thread (thread-safe: reads two attributes).

        Returns:
            True when the console has the focus and commands ran: they were cancelled and the
            key is consumed.
        """
        running = self._console_running_ids
        if not (self._console_focused and running):
            return False
        self._cancel(running)
        return True

    def _console_changed(self) -> None:
        self._console_running_ids = tuple(self._console_lines)
        panel = next(self.query("#console").results(ConsolePanel), None)
        if panel is not None:
            panel.running = len(self._console_running_ids)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Track whether the focus is inside the console panel (read by the input thread)."""
        self._console_focused = self._focus_in_console()

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        """See :meth:`on_descendant_focus`."""
        self._console_focused = self._focus_in_console()

    def _focus_in_console(self) -> bool:
        # The screen's focus now, not the event's widget: focus and blur events of two
        # widgets may arrive in either order.
        try:
            node: Widget | None = self.screen.focused
        except ScreenStackError:  # the app is closing
            return False
        while node is not None:
            if isinstance(node, ConsolePanel):
                return True
            parent = node.parent
            node = parent if isinstance(parent, Widget) else None
        return False

    # -- panel and gateway messages --------------------------------------------------------------

    def on_console_panel_command_entered(self, message: ConsolePanel.CommandEntered) -> None:
        """A line typed in the panel: ``/stop`` stops the turn, anything else runs."""
        if slash_command(message.line) == "stop":
            self.console_panel.write_line(f"› {message.line}")
            self._stop_from_command()
            return
        self.run_console_line(message.line)
        if slash_command(message.line) == "sessions":
            self.open_sessions()

    def on_console_panel_cancel_requested(self, message: ConsolePanel.CancelRequested) -> None:
        """The panel's Cancel button (or Esc in the panel)."""
        self.cancel_console_commands()

    def on_console_output_arrived(self, message: ConsoleOutputArrived) -> None:
        """``console.output`` of a command started here."""
        if message.payload.command_id in self._console_lines:
            self.console_panel.write(message.payload.text)
            found = NEW_SESSION_LINE.search(message.payload.text)
            if found is not None:  # ``/new``'s own report: a fallback if focus_session is lost
                self._console_new_session[message.payload.command_id] = found.group(1)

    async def on_console_command_ended(self, message: ConsoleCommandEnded) -> None:
        """``console.complete``: the outcome line; ``/new`` switches the desk to its session."""
        p = message.payload
        created = self._console_new_session.pop(p.command_id, None)
        if self._console_lines.pop(p.command_id, None) is None:
            return  # not started from this desk
        self._console_changed()
        self.console_panel.write_line(outcome_line(p.status, p.message, p.elapsed_s))
        words = p.line.split()
        if p.status == "ok" and slash_command(p.line) == "model" and len(words) == 2:
            self.query_one("#status", StatusBar).model = words[1]  # the session's new model
        target = p.focus_session or created
        if target is not None and target != self._session_id and not self._exiting():
            # Switch whatever the status: a /new that created its session and was then
            # cancelled or timed out still made the session the person asked for.
            await self.show_session(target, [])

    def _exiting(self) -> bool:
        return not self.transcript.is_attached
