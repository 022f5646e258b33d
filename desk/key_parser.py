"""The terminal input parser: Textual's, with unknown escape sequences ignored, never typed.

Textual's :class:`~textual._xterm_parser.XTermParser` reads every ``ESC [ digits ~`` (and
``ESC [ digits letter``) as a Kitty keyboard-protocol key and, when the number names no key,
makes the character with that code point of it: ``ESC[999~`` typed "ϧ", ``ESC[57~`` typed "9",
and ``ESC[25~`` (F13 in Textual's own table) typed Ctrl+Y. A code point is a key only after
``u`` (``ESC[97u`` is "a"); after ``~`` or a letter the number names a function key, from
:data:`~textual._keyboard_protocol.FUNCTIONAL_KEYS` or, failing that, from Textual's table of
legacy sequences. :class:`DeskParser` keeps those and ignores the rest: a sequence a terminal
sends that desk does not know does nothing. A sequence with a text field (``ESC[27;5;13~``,
xterm's modifyOtherKeys) keeps Textual's reading of that text.

It also never raises on what it reads: a code point out of range (``ESC[9999999u``) or a
malformed field (``ESC[1:2u``) is ignored, where Textual's parser raised ``ValueError`` out of
the input thread.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from textual import events
from textual._ansi_sequences import ANSI_SEQUENCES_KEYS, IGNORE_SEQUENCE
from textual._keyboard_protocol import FUNCTIONAL_KEYS
from textual._xterm_parser import XTermParser, _re_extended_key
from textual.keys import Keys

COMPLETE_CSI = re.compile(r"\x1b\[[\d;:]*[~A-LN-Za-ln-z]")
"""A whole CSI sequence made of digits, ``;`` and ``:`` (what a key sends). ``M`` and ``m``
are left out: mouse reports end in them and are read after keys."""


def ignored(sequence: str) -> events.Key:
    """The key event Textual's parser drops (it carries the ignored ``sequence``)."""
    return events.Key(Keys.Ignore, sequence)


def _function_key_unknown(sequence: str) -> bool:
    """True when ``sequence`` reads as a Kitty function key (``~`` or a letter, no text
    field) whose number names no key in :data:`FUNCTIONAL_KEYS`."""
    match = _re_extended_key.fullmatch(sequence)
    if match is None:
        return False
    codes, end = match.groups(default="")
    if end == "u":
        return False
    fields = codes.split(";")
    if len(fields) > 2 and fields[2]:  # a text field: Textual types that text
        return False
    number = fields[0] or "1"
    if not number.isdigit():
        return True
    return f"{int(number)}{end}" not in FUNCTIONAL_KEYS


def _legacy_keys(sequence: str) -> list[events.Key]:
    """The keys Textual's table of legacy sequences gives ``sequence`` (none: not in it)."""
    keys = ANSI_SEQUENCES_KEYS.get(sequence)
    if keys is IGNORE_SEQUENCE:
        return [ignored(sequence)]
    if isinstance(keys, tuple):
        return [events.Key(key.value, None) for key in keys]
    return []


class DeskParser(XTermParser):
    """:class:`XTermParser` that ignores unknown sequences and never raises on input.

    Args:
        debug: Textual's debug flag (logs keys to ``keys.log``).
    """

    def _sequence_to_key_events(self, sequence: str, alt: bool = False) -> Iterable[events.Key]:
        """The keys ``sequence`` makes: Textual's, but an unknown function key or a whole
        CSI sequence that makes no key is one ignored key (so the parser stops reading it)."""
        if _function_key_unknown(sequence):
            return _legacy_keys(sequence) or [ignored(sequence)]
        try:
            keys = list(super()._sequence_to_key_events(sequence, alt))
        except (ValueError, OverflowError):  # a code point out of range, a malformed field
            return [ignored(sequence)]
        if not keys and COMPLETE_CSI.fullmatch(sequence):
            return [ignored(sequence)]
        return keys
