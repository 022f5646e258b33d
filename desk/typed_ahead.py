"""Keys typed before desk took the terminal: read when the first frame takes it, handed to the
app's input thread as its first input.

Until :mod:`desk.early_frame` switches the terminal to raw input, the line discipline still
cooks what is typed: Enter (CR) becomes LF, which desk reads as Ctrl+J (a new line in the box),
so a prompt typed ahead and "sent" before desk was up was never sent. Whatever waits in the
terminal's input queue at the switch was typed under those rules: it is read then, its LFs
turned back into the CRs they were typed as, and kept here until the app's input thread
(:mod:`desk.driver`) takes it and parses it before anything it reads itself.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_kept = bytearray()


def keep(data: bytes) -> None:
    """Keep ``data`` (bytes read from the terminal before the app's input thread ran)."""
    with _lock:
        _kept.extend(data)


def take() -> bytes:
    """What was kept, once (b"" when nothing was); the input thread calls it as it starts."""
    with _lock:
        data = bytes(_kept)
        _kept.clear()
    return data


def uncooked(data: bytes) -> bytes:
    """Bytes typed while the terminal translated CR to LF (``ICRNL``), as they were typed: each
    LF was an Enter (Ctrl+J typed ahead of a desk not yet up is far less likely)."""
    return data.replace(b"\n", b"\r")
