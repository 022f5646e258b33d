"""The app's key bindings: what each key does wherever the focus is, and where the stop key
goes among them.

The stop key (``stop_key`` in ``config.toml``, :mod:`desk.stop_key`) is bound where the footer
lists it, right after F2 (Console); when it takes Ctrl+G, the editor moves to F4. While Esc
stops (the default), Alt+y / Alt+a / Alt+n answer no approval and are not bound: a terminal
sends them as ESC and a letter, which is Esc then that letter (:mod:`desk.approval_keys`).
"""

from __future__ import annotations

from textual.binding import Binding, BindingType

from desk.approval_keys import CHORD_KEYS, chords_answer
from desk.stop_key import StopKey

EDITOR_KEY = "ctrl+g"
"""Opens the prompt in ``$VISUAL``/``$EDITOR``."""

EDITOR_KEY_TAKEN = "f4"
"""Opens the editor instead when ``stop_key`` is :data:`EDITOR_KEY`."""

APP_BINDINGS: list[BindingType] = [
    Binding("ctrl+b", "toggle_sessions", "Sessions", priority=True),
    Binding("f2", "toggle_console", "Console", priority=True),
    Binding("ctrl+c", "stop_or_quit", "Stop / quit", show=False, priority=True),
    Binding("ctrl+q", "quit", "Quit", priority=True),
    Binding("f1", "help", "Help"),
    Binding(EDITOR_KEY, "edit_prompt", "Editor", show=False, priority=True),
    Binding("pageup", "page_transcript(-1)", "Scroll up", show=False, priority=True),
    Binding("pagedown", "page_transcript(1)", "Scroll down", show=False, priority=True),
    # End also moves the prompt box's cursor: the action lets the key go on (SkipAction).
    Binding("end,ctrl+end", "follow_transcript", "Follow", show=False, priority=True),
    # Shown while an approval waits (check_action); they answer wherever the focus is. Dropped
    # while Esc stops (bind_stop_key).
    Binding("alt+y", "answer_approval('once')", "Allow once", key_display="M-y", priority=True),
    Binding("alt+a", "answer_approval('always')", "Always", key_display="M-a", priority=True),
    Binding("alt+n", "answer_approval('deny')", "Deny", key_display="M-n", priority=True),
]
"""The app's bindings, the stop key aside (:func:`bind_stop_key` adds it)."""


def bind_stop_key(bindings: dict[str, list[Binding]], stop_key: StopKey) -> None:
    """Bind the stop key (action ``stop``) right after F2, in place; while it is Esc (once or
    twice), drop the Alt chords that answer an approval.

    Args:
        bindings: an app's key -> bindings map (``App._bindings.key_to_bindings``), in the
            footer's order; what the stop key was bound to before is dropped.
        stop_key: the stop key.
    """
    key = stop_key.key
    shown = f"{key} {key}" if stop_key.double else None
    stop = Binding(key, "stop", "Stop", key_display=shown, priority=True)
    ordered: dict[str, list[Binding]] = {}
    dropped = frozenset() if chords_answer(stop_key.keys) else frozenset(CHORD_KEYS)
    for name, listed in bindings.items():
        if name in dropped:
            continue
        if name != key:  # the stop key wins over what the app binds it to otherwise
            ordered[name] = listed
        if name == "f2":
            ordered[key] = [stop]
    if key == EDITOR_KEY:  # the stop key took the editor's key: the editor moves
        ordered[EDITOR_KEY_TAKEN] = [
            Binding(EDITOR_KEY_TAKEN, "edit_prompt", "Editor", show=False, priority=True)
        ]
    bindings.clear()
    bindings.update(ordered)
