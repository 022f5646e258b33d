"""The key names a key setting may use are the names Textual gives keys: the list kept apart
from Textual agrees with Textual's own."""

from __future__ import annotations

import pytest
from textual._keyboard_protocol import FUNCTIONAL_KEYS
from textual.keys import Keys, _character_to_key

from tui_gateway.settings.key_names import MODIFIERS, NAMED_KEYS, key_name

TEXTUAL_NAMES = frozenset(
    key.value for key in Keys if key.value[0] != "<" and not {"-", "@"} & set(key.value)
) | frozenset(FUNCTIONAL_KEYS.values())
"""Every key name Textual's terminal parsers give (``ctrl-at`` and the ``<...>`` markers are
not keys; ``ctrl+@``, Ctrl+Space, is written ``ctrl+space`` or ``ctrl+at`` in a setting, whose
names are letters, digits and ``_``)."""


@pytest.mark.parametrize("name", sorted(TEXTUAL_NAMES))
def test_every_key_name_textual_gives_is_taken_as_it_is(name: str) -> None:
    assert key_name(name) == name


def test_every_named_key_is_one_textual_gives() -> None:
    bases = {name.rpartition("+")[2] for name in TEXTUAL_NAMES}
    assert bases >= NAMED_KEYS
    assert {m for name in TEXTUAL_NAMES for m in name.split("+")[:-1]} <= set(MODIFIERS)


@pytest.mark.parametrize("char", [chr(c) for c in range(0x21, 0x7F) if not chr(c).isupper()])
def test_a_printable_character_is_taken_by_textuals_name_for_it(char: str) -> None:
    name = _character_to_key(char)
    assert key_name(name) == name
    assert key_name(f"ctrl+{name}") == f"ctrl+{name}"


@pytest.mark.parametrize(
    ("word", "name"),
    [("esc", "escape"), ("pgdn", "pagedown"), ("del", "delete"), ("solidus", "slash")],
)
def test_the_names_textual_shows_keys_by_are_read_as_the_keys(word: str, name: str) -> None:
    assert key_name(word) == name


@pytest.mark.parametrize(
    "word",
    ["nokey", "ctrl+", "+", "ctrl", "ctrl+ctrl+g", "hyperx+g", "f36", "latin_small_letter_a"],
)
def test_a_name_no_key_has_is_refused(word: str) -> None:
    assert key_name(word) is None
