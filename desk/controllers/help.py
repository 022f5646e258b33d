"""The help screen's rows (F1): the live key bindings, the prompt box's keys, every command.

Built each time the screen opens from what really works now: the screen's active bindings, the
desk's own slash commands, the commands the gateway's console runs and the palette's entries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from textual.app import App
from textual.binding import ActiveBinding, Binding
from textual.widgets import TextArea

from contract.results import ConsoleCommandInfo
from desk.commands import PaletteCommand
from desk.screens.help_screen import CLOSE_KEYS, HelpRows, HelpScreen, key_label
from desk.slash import SLASH_COMMANDS
from desk.stop_key import StopKey
from desk.widgets.prompt_input import PromptInput

HELP_TEXT: dict[str, str] = {
    "stop": "Stop the running turn (with nothing running it does nothing)",
    "stop_or_quit": (
        "Stop the running turn; with nothing running, empty the prompt box (Up recalls it), "
        "then twice within 2 s quits"
    ),
    "quit": "Quit (running turns are stopped first, as the system)",
    "help": "This help",
    "command_palette": "Command palette: every command",
    "page_transcript(-1)": "Scroll the transcript up",
    "page_transcript(1)": "Scroll the transcript down",
    "app.focus_next": "Move the focus to the next control (not from the prompt box: see Tab below)",
    "app.focus_previous": "Move the focus to the previous control",
    "follow_transcript": "Back to the end of the transcript, following it again",
    "answer_approval('once')": "Allow the waiting tool call once (at any time)",
    "answer_approval('always')": "Allow the waiting tool's calls for this session (at any time)",
    "answer_approval('deny')": "Deny the waiting tool call (at any time)",
    "toggle_console": "Show or hide the console panel",
    "toggle_sessions": "Show or hide the sessions sidebar",
    "edit_prompt": "Write the prompt in $VISUAL or $EDITOR; what you save comes back into the box",
}
"""Help-screen wording per binding action (else the binding's own description)."""

HELP_KEY_ORDER = ("escape", "ctrl+c", "ctrl+q", "f1", "ctrl+p", "f2", "ctrl+b")
"""Keys listed first on the help screen, in this order (the rest follow as bound)."""

PROMPT_KEYS: tuple[tuple[str, str], ...] = (
    (
        "Up",
        "Recall the previous prompt (on the first line); on an empty box with prompts "
        "queued, edit the last of them",
    ),
    ("Down", "Newer prompts, then back to what you were typing (on the last line)"),
    (
        "Tab",
        "Complete a /command, or the file of an @mention (Tab again: the next match); "
        "otherwise nothing",
    ),
    ("Shift+Tab", "To a waiting approval's card: then y / a / n answer it"),
)
"""Keys of the prompt box that are not bindings (handled in its key handler)."""


def stop_key_help(stop_key: StopKey) -> str:
    """What F1 says of the stop key, and where it is set."""
    if stop_key.double:
        what = (
            f"Pressed twice within {stop_key.window_s:g} s: stop the running turn (one press "
            "does what the key does elsewhere)"
        )
    else:
        what = "Stop the running turn (with nothing running it does nothing)"
    setting = f"{stop_key.key} {stop_key.key}" if stop_key.double else stop_key.key
    return f'{what} · stop_key = "{setting}" in config.toml'


def help_sections(
    bindings: Mapping[str, ActiveBinding],
    console: Iterable[ConsoleCommandInfo],
    palette: Iterable[PaletteCommand],
    stop_key: StopKey | None = None,
) -> list[tuple[str, HelpRows]]:
    """The help screen's sections.

    Args:
        bindings: the screen's active bindings (``Screen.active_bindings``).
        console: the commands the gateway's console runs.
        palette: the command palette's entries (those it lists unasked are shown).
        stop_key: the configured stop key (its row names it, and a double press).

    Returns:
        (title, rows) per section: keys, the prompt box's keys, slash commands, palette.
    """
    own_prompt_keys = {(b.key, b.action) for b in Binding.make_bindings(PromptInput.BINDINGS)}
    keys: dict[str, str] = {}
    prompt: dict[str, str] = {}
    for key, active in bindings.items():
        binding = active.binding
        if binding.system:
            continue
        what = HELP_TEXT.get(binding.action) or binding.description or binding.action
        label = key_label(key)
        if binding.action == "stop" and stop_key is not None:
            what, label = stop_key_help(stop_key), _stop_label(stop_key)
        if isinstance(active.node, PromptInput):
            if (binding.key, binding.action) in own_prompt_keys:
                prompt.setdefault(label, what)
        elif not isinstance(active.node, TextArea):
            keys.setdefault(label, what)
    prompt.update(PROMPT_KEYS)
    slash = [(command.usage, command.help) for command in SLASH_COMMANDS]
    slash += [(command.usage, command.summary) for command in console]
    listed = [(c.title, c.help) for c in palette if c.discover]
    first = [key_label(key) for key in HELP_KEY_ORDER]
    if stop_key is not None:
        first.insert(0, _stop_label(stop_key))
    ordered = sorted(keys.items(), key=lambda row: first.index(row[0]) if row[0] in first else 99)
    return [
        ("Keys", ordered),
        ("In the prompt box", list(prompt.items())),
        ("Slash commands (typed in the prompt box)", slash),
        ("Command palette (Ctrl+P; type to search, e.g. a theme or model name)", listed),
    ]


def toggle_help(
    app: App[int],
    console: Iterable[ConsoleCommandInfo],
    palette: Callable[[], Iterable[PaletteCommand]],
    stop_key: StopKey,
) -> None:
    """F1: close the help screen when it is shown, else open it with what works now.

    Args:
        app: the app (its screen's active bindings).
        console: the commands the gateway's console runs.
        palette: the command palette's entries, read when the screen opens.
        stop_key: the configured stop key.
    """
    if isinstance(app.screen, HelpScreen):
        app.screen.dismiss(None)
        return
    sections = help_sections(app.screen.active_bindings, console, palette(), stop_key=stop_key)
    app.push_screen(HelpScreen(sections))


def close_help_on_stop(app: App[int], key: str) -> None:
    """A stop key stopped a turn: when it is a key that closes the help screen too (Esc) and
    the help is shown, close it — the key does both, as the help says ("Esc / F1 closes").

    Args:
        app: the app.
        key: the key that stopped the turn (``escape``, ``ctrl+c``...).
    """
    if key in CLOSE_KEYS and isinstance(app.screen, HelpScreen):
        app.screen.dismiss(None)


def _stop_label(stop_key: StopKey) -> str:
    label = key_label(stop_key.key)
    return f"{label} {label}" if stop_key.double else label
