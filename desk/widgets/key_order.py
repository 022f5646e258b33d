"""Keys of a text field act in the order they were typed, however fast they come.

Textual runs a widget's own (not priority) binding only once the key has bubbled up to the
app, through every ancestor's queue, while the characters typed after it go straight into the
widget's own queue: in a burst of typing, Backspace, Ctrl+U or an arrow landed after the
characters that followed it (``BSpace BSpace xyz`` gave ``ijx``). A text field calls
:func:`run_own_binding` from its ``_on_key``, so its own bindings run there, in the order of
the keys; its ancestors' and the app's bindings still get every key it does not bind.
"""

from __future__ import annotations

from textual import events
from textual.widget import Widget


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
