"""The desk's living-in features, as a mixin of :class:`desk.app.DeskApp`.

Themes (loaded from TOML, chosen with ``/theme`` or the palette, saved in the config file), the
help screen (F1), the Ctrl+C double press, the command palette's desk commands, ``/export``,
``/model``, the status bar's context gauge (the server's context window is asked once, off the
UI thread) and the note when a quit's bound expired. It lives apart from ``app.py`` so the
stop path there stays short; Textual runs message handlers of every class in the MRO, so the
handlers here run after the app's own (``on_mount``, ``on_turn_completed``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static, TextArea

from agent.tokens import tokens_in_chars
from desk.commands import DeskCommands, PaletteCommand
from desk.double_press import DoublePress
from desk.export import blocks_from, resolve_export_path, session_markdown, write_export
from desk.messages import TurnCompleted
from desk.screens.help_screen import HelpRows, HelpScreen, key_label
from desk.server_facts import ServerFacts, fetch_in_background
from desk.shutdown import shutdown_note
from desk.slash import SLASH_COMMANDS, parse_slash
from desk.theme_files import DEFAULT_THEME, load_themes, ordered_names, theme_dirs
from desk.user_config import ConfigFileError, config_path, read_config, set_config_value
from desk.widgets.prompt_input import PromptInput
from desk.widgets.status_bar import StatusBar as _StatusBar
from tui_gateway.console.commands import COMMANDS as CONSOLE_COMMANDS

if TYPE_CHECKING:
    from desk.config import ConnectionInfo
    from desk.ports import DeskGateway
    from desk.widgets import StatusBar, Transcript
    from desk.widgets.status_bar import Clock
    from tui_gateway.gateway import ShutdownReport

    _AppBase = App[int]
else:
    _AppBase = object

EXIT_NOTE_S = 1.5
"""How long the "gave up waiting" note stays on screen before the desk exits, in seconds."""

HELP_TEXT: dict[str, str] = {
    "stop": "Stop the running turn (with nothing running it does nothing)",
    "stop_or_quit": "Stop the running turn; with nothing running, twice within 2 s quits",
    "quit": "Quit (running turns are stopped first, as the system)",
    "help": "This help",
    "command_palette": "Command palette: every command",
    "page_transcript(-1)": "Scroll the transcript up",
    "page_transcript(1)": "Scroll the transcript down",
    "app.focus_next": "Move the focus to the next control",
    "app.focus_previous": "Move the focus to the previous control",
    "toggle_console": "Show or hide the console panel",
    "toggle_sessions": "Show or hide the sessions sidebar",
}
"""Help-screen wording per binding action (else the binding's own description)."""

HELP_KEY_ORDER = ("escape", "ctrl+c", "ctrl+q", "f1", "ctrl+p", "f2", "ctrl+b")
"""Keys listed first on the help screen, in this order (the rest follow as bound)."""

QUIT_HINT = "press Ctrl+C again to quit"
"""The status bar's notice after a first Ctrl+C with nothing running."""

WallClock = Callable[[], datetime]
"""Returns the local time now (``datetime.now`` or a test's pinned time)."""


class ServerFactsFetched(Message):
    """The server's context window and models arrived (posted from the fetching thread)."""

    def __init__(self, facts: ServerFacts) -> None:
        super().__init__()
        self.facts = facts
        """What the server said."""


class DeskExtras(_AppBase):
    """Mixin for the desk app (see the module docstring); reads the environment at start.

    It needs, from the app: ``gateway``, ``connection``, ``_clock``, ``session_id``,
    ``transcript``, ``status_bar`` and ``shutdown_report``.
    """

    COMMANDS = {DeskCommands}  # desk's commands first, then Textual's (see palette_commands)

    if TYPE_CHECKING:
        gateway: DeskGateway
        connection: ConnectionInfo
        _clock: Clock

        @property
        def session_id(self) -> str: ...

        @property
        def transcript(self) -> Transcript: ...

        @property
        def status_bar(self) -> StatusBar: ...

        @property
        def shutdown_report(self) -> ShutdownReport | None: ...

    def __init__(self) -> None:
        env = dict(os.environ)
        super().__init__()
        self.config_path = config_path(env)
        """The config file the theme choice is saved in."""
        self.wall_clock: WallClock = datetime.now
        """Local time for export names and headers (tests pin it)."""
        self.server_facts = ServerFacts()
        """The server's context window and models (defaults until they arrive)."""
        self.exit_note = ""
        """Set when a quit gave up waiting for workers (``desk`` prints it after exiting)."""
        self.exit_note_s = EXIT_NOTE_S
        """Seconds that note stays on screen before the desk exits."""
        self._ctrl_c = DoublePress()
        self._startup_problems: list[str] = []
        self._load_themes(env)

    # -- themes --------------------------------------------------------------------------------

    def _load_themes(self, env: dict[str, str]) -> None:
        loaded = load_themes(theme_dirs(env))
        self.theme_files = dict(loaded.origins)
        """The themes loaded from TOML files (desk's and the person's) and their files."""
        for theme in loaded.themes.values():
            self.register_theme(theme)
        self._startup_problems += loaded.errors
        wanted = DEFAULT_THEME
        try:
            configured = read_config(self.config_path).get("theme")
        except ConfigFileError as exc:
            self._startup_problems.append(exc.message)
            configured = None
        if isinstance(configured, str) and configured:
            wanted = configured
        if wanted not in self.available_themes:
            if wanted != DEFAULT_THEME:
                self._startup_problems.append(f"no theme named {wanted!r}; using the default")
            wanted = DEFAULT_THEME if DEFAULT_THEME in self.available_themes else "textual-dark"
        self.theme = wanted

    @property
    def desk_theme_names(self) -> list[str]:
        """Every registered theme, desk's own first."""
        return ordered_names(self.available_themes)

    def choose_theme(self, name: str) -> bool:
        """Use theme ``name`` and save the choice in the config file.

        Returns:
            False when there is no such theme (a notice says so).
        """
        if name not in self.available_themes:
            known = ", ".join(self.desk_theme_names)
            self.notify(f"no theme named {name!r}; themes: {known}", severity="error")
            return False
        self.theme = name
        try:
            set_config_value(self.config_path, "theme", name)
        except ConfigFileError as exc:
            self.notify(f"theme {name} is used but not saved: {exc.message}", severity="warning")
            return True
        self.notify(f"theme {name} · saved in {self.config_path}", title="Theme")
        return True

    # -- start ---------------------------------------------------------------------------------

    def on_mount(self) -> None:
        """After the app's own ``on_mount``: show start-up problems once, ask the server."""
        for footer in self.query(Footer).results(Footer):
            footer.compact = True  # every main key fits in 80 columns
        if self._startup_problems:
            self.notify(
                "\n".join(self._startup_problems),
                title="Some settings could not be loaded",
                severity="warning",
                timeout=15,
            )
        provider = getattr(getattr(self.gateway, "config", None), "provider", None)
        api_key = getattr(provider, "api_key", None)
        fetch_in_background(
            self.connection.base_url,
            lambda facts: self.post_message(ServerFactsFetched(facts)),
            api_key=api_key if isinstance(api_key, str) else None,
        )

    def on_server_facts_fetched(self, message: ServerFactsFetched) -> None:
        """The context window for the gauge, and the models for ``/model`` and the palette."""
        self.server_facts = message.facts
        # The facts come from a thread and may land while the app exits, after the status bar
        # was removed (NoMatches('#status') was seen once): then there is nothing to update.
        status = next(self.query("#status").results(_StatusBar), None)
        if status is None or not status.is_attached or not self.is_running:
            return
        status.context_window = message.facts.n_ctx

    async def on_turn_completed(self, message: TurnCompleted) -> None:
        """After the app's own handler: the context gauge from the turn's size as the server
        counted it: its prompt plus the reply, which the next request carries too."""
        payload = message.payload
        if message.session_id != self._session_or_none():
            return
        status = self.status_bar
        if payload.prompt_tokens is not None:
            status.context_used = payload.prompt_tokens + (payload.completion_tokens or 0)
        elif status.context_used is not None or payload.text:
            # A stopped or failed turn: the server sent no count, but the prompt and the partial
            # reply are in the context now all the same (estimated, 4 characters a token).
            prompt = self.transcript.prompt(payload.turn_id)
            added = (len(prompt.text) if prompt is not None else 0) + len(payload.text)
            status.context_used = (status.context_used or 0) + tokens_in_chars(added)

    def _session_or_none(self) -> str | None:
        try:
            return self.session_id
        except RuntimeError:
            return None

    # -- keys ----------------------------------------------------------------------------------

    def confirm_quit(self) -> bool:
        """Ctrl+C with nothing running: True on the second press within 2 s, else say so."""
        if self._ctrl_c.press(self._clock()):
            return True
        # In the status bar, not a toast: a toast covered the prompt box and the status bar.
        status = self.status_bar
        status.notice = QUIT_HINT
        self.set_timer(self._ctrl_c.window_s, self._clear_quit_hint)
        return False

    def _clear_quit_hint(self) -> None:
        status = next(self.query("#status").results(_StatusBar), None)
        if status is not None and status.notice == QUIT_HINT:
            status.notice = ""

    def action_help(self) -> None:
        """F1: show (or close) the keys and commands."""
        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss(None)
            return
        self.push_screen(HelpScreen(self.help_sections()))

    def help_sections(self) -> list[tuple[str, HelpRows]]:
        """The help screen's sections, from the live bindings and the slash commands."""
        own_prompt_keys = {(b.key, b.action) for b in Binding.make_bindings(PromptInput.BINDINGS)}
        keys: dict[str, str] = {}
        prompt: dict[str, str] = {}
        for key, active in self.screen.active_bindings.items():
            binding = active.binding
            if binding.system:
                continue
            what = HELP_TEXT.get(binding.action) or binding.description or binding.action
            if isinstance(active.node, PromptInput):
                if (binding.key, binding.action) in own_prompt_keys:
                    prompt.setdefault(key_label(key), what)
            elif not isinstance(active.node, TextArea):
                keys.setdefault(key_label(key), what)
        prompt["Up"] = "Recall the previous prompt (on the first line)"
        prompt["Down"] = "Newer prompts, then back to what you were typing (on the last line)"
        prompt["Tab"] = "Complete a /command (Tab again: the next match)"
        slash = [(command.usage, command.help) for command in SLASH_COMMANDS]
        slash += [(usage, what) for _fn, usage, what in CONSOLE_COMMANDS.values()]
        palette = [(c.title, c.help) for c in self.palette_commands() if c.discover]
        first = [key_label(key) for key in HELP_KEY_ORDER]
        ordered = sorted(
            keys.items(), key=lambda row: first.index(row[0]) if row[0] in first else 99
        )
        return [
            ("Keys", ordered),
            ("In the prompt box", list(prompt.items())),
            ("Slash commands (typed in the prompt box)", slash),
            ("Command palette (Ctrl+P; type to search, e.g. a theme or model name)", palette),
        ]

    # -- palette -------------------------------------------------------------------------------

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """Textual's system commands, less its theme picker (the desk's saves the choice)."""
        for command in super().get_system_commands(screen):
            if command.title != "Theme":
                yield command

    def palette_commands(self, screen: Screen[object] | None = None) -> list[PaletteCommand]:
        """The palette's entries: the desk's own, then Textual's system commands (of ``screen``).

        Entries that need a feature this desk lacks (console, sessions...) are left out.
        """
        commands: list[PaletteCommand] = []

        def action(name: str) -> Callable[[], object]:
            return lambda: self.run_action(name)

        optional = [
            ("new_session", "New session", "start an empty session"),
            ("resume_session", "Resume a session", "reopen a saved session"),
            ("toggle_sessions", "Sessions", "show or hide the sessions sidebar (Ctrl+B)"),
            (
                "compress",
                "Compress the conversation",
                "summarise the middle of this session now (/compress [focus])",
            ),
            ("toggle_console", "Toggle console", "show or hide the console panel (F2)"),
        ]
        for name, title, help_text in optional:
            if callable(getattr(self, f"action_{name}", None)):
                commands.append(PaletteCommand(title, help_text, action(name)))
        commands.append(PaletteCommand("Stop", "stop the running turn (Esc)", action("stop")))
        commands.append(
            PaletteCommand(
                "Export as Markdown",
                "write this session to ./desk-<session>-<date>.md",
                action("export"),
            )
        )
        commands.append(PaletteCommand("Help", "every key and command (F1)", action("help")))
        for name in self.desk_theme_names:
            current = " (current)" if name == self.theme else ""
            commands.append(
                PaletteCommand(
                    f"Theme: {name}",
                    f"use the {name} colours{current}; saved for next time",
                    lambda name=name: self.choose_theme(name),  # type: ignore[misc]
                    discover=name in self.theme_files,
                )
            )
        model = self.status_bar.model or self.connection.model
        for name in self.server_facts.models or (model,):
            current = " (current)" if name == model else ""
            commands.append(
                PaletteCommand(
                    f"Model: {name}",
                    f"use {name} for the next turns{current}",
                    lambda name=name: self.choose_model(name),  # type: ignore[misc]
                )
            )
        for system in self.get_system_commands(screen or self.screen):
            if system.title not in ("Quit", "Keys"):  # Ctrl+Q and F1 say it better
                commands.append(PaletteCommand(system.title, system.help, system.callback))
        commands.append(
            PaletteCommand("Quit", "stop every running turn, then quit", action("quit"))
        )
        return commands

    # -- slash commands ------------------------------------------------------------------------

    async def handle_slash(self, text: str) -> bool:
        """Run a desk slash command typed in the prompt box.

        Returns:
            True when ``text`` was one of the desk's commands (the prompt box is then cleared
            and nothing is sent); False for anything else.
        """
        parsed = parse_slash(text)
        if parsed is None:
            return False
        name, arg = parsed
        if name == "theme":
            if arg:
                self.choose_theme(arg)
            else:
                await self.add_transcript_line(
                    "themes: " + self._listing(self.desk_theme_names, self.theme)
                )
        elif name == "export":
            await self.action_export(arg)
        else:
            return False
        self.query_one(PromptInput).clear()
        return True

    @staticmethod
    def _listing(names: list[str], current: str) -> str:
        return ", ".join(f"{n} (current)" if n == current else n for n in names)

    def choose_model(self, name: str) -> None:
        """Use model ``name`` for this session's next turns (the running one keeps its own)."""
        set_model = getattr(self.gateway, "session_set_model", None)
        if not callable(set_model):
            self.notify("this gateway cannot change the model", severity="error")
            return
        set_model(self.session_id, name)
        self.status_bar.model = name
        self.notify(f"model {name} for the next turns", title="Model")

    async def action_export(self, path: str = "") -> None:
        """``/export [PATH]``: write the session as Markdown (atomically) and say where."""
        now = self.wall_clock()
        target = resolve_export_path(path, self.session_id, now, Path.cwd())
        blocks = blocks_from(self.transcript.children)
        markdown = session_markdown(
            blocks,
            session_id=self.session_id,
            model=self.status_bar.model or self.connection.model,
            exported_at=now,
        )
        try:
            write_export(target, markdown)
        except OSError as exc:
            why = exc.strerror or str(exc)
            await self.add_transcript_line(
                f"✖ export failed: cannot write {target}: {why}", error=True
            )
            return
        count = sum(block.kind in ("user", "assistant") for block in blocks)
        noun = "block" if count == 1 else "blocks"
        await self.add_transcript_line(f"⇩ exported {count} {noun} to {target}")

    async def add_transcript_line(self, text: str, *, error: bool = False) -> None:
        """Show one line at the end of the transcript (``-error`` styles it as an error)."""
        classes = "note -error" if error else "note"
        await self.transcript.mount(Static(text, classes=classes, markup=False))
        self.transcript.scroll_end(animate=False)

    # -- quitting ------------------------------------------------------------------------------

    def exit_after_shutdown(self) -> None:
        """The gateway's shutdown returned: exit, first saying so if its bound expired."""
        config = getattr(self.gateway, "config", None)
        bound = float(getattr(config, "shutdown_timeout_s", 10.0))
        note = shutdown_note(self.shutdown_report, bound)
        if not note:
            self.exit(0)
            return
        self.exit_note = note
        self.status_bar.notice = note
        self.set_timer(self.exit_note_s, lambda: self.exit(0))
