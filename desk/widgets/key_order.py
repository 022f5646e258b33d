"""Keys of a text field act in the order they were typed, however fast they come.

Textual runs a widget's own (not priority) binding only once the key has bubbled up to the
app, through every ancestor's queue, while the characters typed after it go straight into the
widget's own queue: in a burst of typing, Backspace, Ctrl+U or an arrow landed after the
characters that followed it (``BSpace BSpace xyz`` gave ``ijx``). A text field calls
:func:`run_own_binding` from its ``_on_key``, so its own bindings run there, in the order of
the keys; its ancestors' and the app's bindings still get every key it does not bind.

Textual's fields also insert only characters Python calls printable: a typed no-break space,
zero-width joiner or non-joiner, right-to-left mark or byte order mark was dropped (a family
emoji came out as three faces, two words ran together), though a paste kept them.
:func:`typed_text` is what such a key types, as a paste would show it.
"""

from __future__ import annotations

import unicodedata

from textual import events
from textual.widget import Widget
from textual.widgets import Input

from contract.text import terminal_safe


async def run_own_binding(widget: Widget, event: events.Key) -> bool:
    """Run ``widget``'s own (not priority) binding of the key now, in order with the typed
    characters; True when one ran (the caller then stops the key and prevents its default).

    Args:
        widget: the focused text field the key came to.
        event: the key.
    """
    for key in (event.key, *event.aliases):
        for binding in widget._bindings.key_to_bindings.get(key, ()):
            if not binding.priority and await widget.app.run_action(binding.action, widget):
                return True
    return False


def typed_text(event: events.Key) -> str | None:
    """What a key Textual does not call printable types, or None when it types nothing (a
    control character: those are keys such as Ctrl+X). Format and space characters come out
    as a paste shows them (``terminal_safe``: a bidirectional override as ``<U+202E>``)."""
    char = event.character
    if event.is_printable or char is None or len(char) != 1:
        return None
    if unicodedata.category(char) == "Cc":
        return None
    return terminal_safe(char)


async def type_into(field: Input, event: events.Key) -> bool:
    """Act on a key in a one-line ``field`` now: its own binding, else the text it types
    (over the selection, if any); True when it did (the caller then stops the key and prevents
    its default), False for a key the field does nothing with (Esc, Tab, F-keys).

    A widget that keeps the keys typed before the focus reached ``field`` hands them here, so
    they act in the order they were typed, before the keys typed after them.

    Args:
        field: the text field.
        event: the key.
    """
    if await run_own_binding(field, event):
        return True
    text = event.character if event.is_printable else typed_text(event)
    if text is None:
        return False
    start, end = field.selection
    if start == end:
        field.insert_text_at_cursor(text)
    else:
        field.replace(text, min(start, end), max(start, end))
    return True
