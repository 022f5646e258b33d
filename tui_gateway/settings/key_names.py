"""The key names a key setting may use: the names Textual gives the keys a terminal sends.

A binding of a name Textual never produces (``"esc"``, ``"nokey"``) binds nothing, so such a
setting is refused rather than shown in the footer as a key that does nothing. The names are
Textual's (``textual.keys.Keys`` and the kitty keyboard protocol's functional keys,
``textual._keyboard_protocol.FUNCTIONAL_KEYS``), kept here since this layer does not import
Textual; a test checks the two lists agree. A key is one of them, or one printable character
(``"g"``, ``"9"``, or its Unicode name as Textual spells it, ``"slash"``,
``"exclamation_mark"``), after modifiers (``ctrl+``, ``alt+``, ``shift+``, ``super+``,
``meta+``, ``hyper+``), which are put in Textual's order (``shift+ctrl+up`` is
``ctrl+shift+up``). The names Textual shows a key by (``esc``, ``del``, ``pgup``, ``pgdn``) are
read as the key's own name. :func:`parse_stop_key` reads the ``stop_key`` setting with them,
and refuses a key the desk keeps for another job (:data:`RESERVED_KEYS`: Ctrl+Q quits).
"""

from __future__ import annotations

import string
import unicodedata
from typing import Final

__all__ = ["KEY_ALIASES", "MODIFIERS", "NAMED_KEYS", "RESERVED_KEYS", "key_name", "parse_stop_key"]

_F_KEYS = frozenset(f"f{n}" for n in range(1, 36))

NAMED_KEYS: Final = frozenset(
    {
        "escape",
        "enter",
        "return",
        "tab",
        "space",
        "backspace",
        "insert",
        "delete",
        "home",
        "end",
        "pageup",
        "pagedown",
        "up",
        "down",
        "left",
        "right",
        "add",
        "subtract",
        "multiply",
        "divide",
        "decimal",
        "separator",
        "equal",
        "kp_begin",
        "caps_lock",
        "scroll_lock",
        "num_lock",
        "print_screen",
        "pause",
        "menu",
        "left_shift",
        "left_control",
        "left_alt",
        "left_super",
        "left_hyper",
        "left_meta",
        "right_shift",
        "right_control",
        "right_alt",
        "right_super",
        "right_hyper",
        "right_meta",
        "iso_level3_shift",
        "iso_level5_shift",
        "media_play",
        "media_pause",
        "media_play_pause",
        "media_reverse",
        "media_stop",
        "media_fast_forward",
        "media_rewind",
        "media_track_next",
        "media_track_previous",
        "media_record",
        "lower_volume",
        "raise_volume",
        "mute_volume",
    }
    | _F_KEYS
)
"""Textual's names of the keys that are not one printable character (lower case)."""

MODIFIERS: Final = ("alt", "ctrl", "hyper", "meta", "shift", "super")
"""The modifiers, in the order Textual writes them (``ctrl+shift+up``)."""

RESERVED_KEYS: Final = {"ctrl+q": "the quit key"}
"""Keys that cannot be the stop key, and the job the desk keeps them for (Ctrl+Q is Textual's
priority quit binding: as the stop key it would quit, or, bound over it, leave no quit key)."""

KEY_ALIASES: Final = {"esc": "escape", "del": "delete", "pgup": "pageup", "pgdn": "pagedown"}
"""Names Textual shows keys by, read as the key's own name."""

_SHORT: Final = {
    "solidus": "slash",
    "reverse_solidus": "backslash",
    "commercial_at": "at",
    "hyphen_minus": "minus",
    "plus_sign": "plus",
    "low_line": "underscore",
}
"""Unicode names of some characters -> Textual's short names for them."""


def _spelled(char: str) -> str:
    """Textual's name of the printable character ``char`` (``/`` -> ``slash``)."""
    name = unicodedata.name(char).lower().replace("-", "_").replace(" ", "_")
    return _SHORT.get(name, name)


_CHARACTERS: Final = {_spelled(char): _spelled(char) for char in string.punctuation} | {
    long: short for long, short in _SHORT.items()
}
"""The names of the printable characters that are not letters or digits -> Textual's."""


def key_name(word: str) -> str | None:
    """The key name Textual gives the key ``word`` names, or None when it names no key.

    Args:
        word: e.g. ``"escape"``, ``"esc"``, ``"ctrl+g"``, ``"f9"``, ``"shift+ctrl+up"``,
            ``"solidus"`` (lower case).

    Returns:
        e.g. ``"escape"``, ``"escape"``, ``"ctrl+g"``, ``"f9"``, ``"ctrl+shift+up"``,
        ``"slash"``; None for ``"nokey"``, ``"ctrl+"``, ``"ctrl+ctrl+g"``...
    """
    *mods, base = word.split("+")
    if len(set(mods)) != len(mods) or any(mod not in MODIFIERS for mod in mods):
        return None
    base = KEY_ALIASES.get(base, base)
    if base in NAMED_KEYS:
        key: str | None = base
    elif len(base) == 1:
        key = base if base in string.ascii_lowercase + string.digits else None
    else:
        key = _CHARACTERS.get(base)
    if key is None:
        return None
    return "+".join([*sorted(mods), key])


def parse_stop_key(text: str) -> tuple[str, bool]:
    """Read a stop key setting: one key name, or one key name twice (a double press).

    Key names are Textual's, lower case: ``escape``, ``ctrl+g``, ``f9``, ``alt+s``; ``esc``
    reads as ``escape`` (:func:`key_name`). A name Textual never gives a key is refused: bound,
    it would stop nothing.

    Args:
        text: e.g. ``"escape"``, ``"Ctrl+G"``, ``"escape escape"``, ``"esc"``.

    Returns:
        the key name (Textual's) and whether it takes two presses.

    Raises:
        ValueError: not one key name, or one key name twice, or a name that is no key, or a
            key the desk keeps for another job (:data:`RESERVED_KEYS`; one line saying what is
            taken).
    """
    words = text.strip().lower().split()
    if len(words) == 2 and (first := _key_name(words[0])) == _key_name(words[1]):
        return _free(first), True  # "esc escape" too
    if len(words) != 1:
        raise ValueError(
            "stop_key must be one key (e.g. 'escape', 'ctrl+g') or one key twice "
            f"('escape escape'), not {text!r}"
        )
    return _free(_key_name(words[0])), False


def _free(name: str) -> str:
    """``name``, when no other job of the desk keeps it (:data:`RESERVED_KEYS`)."""
    job = RESERVED_KEYS.get(name)
    if job is not None:
        raise ValueError(
            f"stop_key: {name!r} is {job}, it cannot stop too (e.g. 'escape', 'ctrl+g', 'f9')"
        )
    return name


def _key_name(word: str) -> str:
    allowed = set("abcdefghijklmnopqrstuvwxyz0123456789+_")
    name = None if set(word) - allowed else key_name(word)
    if name is None:
        raise ValueError(f"stop_key: {word!r} is not a key name (e.g. 'escape', 'ctrl+g', 'f9')")
    return name
