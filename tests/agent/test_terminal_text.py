"""Text made safe for a terminal: no control character survives, printable text is untouched."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from agent.terminal_text import is_terminal_safe, terminal_safe

FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
SGR = re.compile(r"\x1b\[[0-9;:]*m")

# Pieces an attacker would use, mixed with ordinary text by hypothesis.
HOSTILE = [
    "\x1b[2J",
    "\x1b]0;owned\x07",
    "\x1b]2;title\x1b\\",
    "\x1b]52;c;aGVsbG8=\x07",
    "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\",
    "\x1b[?1049l",
    "\x1b[?1000h",
    "\x1bP1$r\x1b\\",
    "\x1b_apc\x1b\\",
    "\x1b^pm\x1b\\",
    "\x1bXsos\x1b\\",
    "\x1bc",
    "\x1b",
    "\x9b2J",
    "\x9d0;t\x9c",
    "\x1b[31m",
    "\x1b[0m",
    "\r",
    "\r\n",
    "\x7f",
    "\x00",
    "\u202e",
    "\u2066",
    "\ud800",
]
hostile_text = st.lists(st.one_of(st.text(), st.sampled_from(HOSTILE))).map("".join)
any_text = st.one_of(st.text(alphabet=st.characters(blacklist_categories=())), hostile_text)
printable = st.text(
    alphabet=st.characters(
        blacklist_characters="\x7f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069",
        blacklist_categories=("Cc", "Cs"),
    )
    | st.sampled_from("\t\n")
)


@given(any_text)
def test_no_control_character_survives(text: str) -> None:
    safe = terminal_safe(text)
    found = FORBIDDEN.search(safe)
    assert found is None, f"{found.group()!r} survived in {safe!r}"
    assert is_terminal_safe(safe)
    assert terminal_safe(safe) == safe  # made safe once is safe for good


@given(any_text)
def test_with_colours_kept_only_sgr_sequences_hold_an_escape(text: str) -> None:
    safe = terminal_safe(text, keep_sgr=True)
    found = FORBIDDEN.search(SGR.sub("", safe))
    assert found is None, f"{found.group()!r} survived in {safe!r}"


@given(printable)
def test_printable_text_passes_unchanged(text: str) -> None:
    assert terminal_safe(text) is text
    assert terminal_safe(text, keep_sgr=True) is text


@given(st.lists(st.text(alphabet="ab \n\x1b[]0;2Jc\x07\x7f\u202e"), min_size=1))
def test_pieces_read_as_the_whole_without_cr_or_sgr(pieces: list[str]) -> None:
    whole = "".join(pieces)
    if SGR.search(whole):  # a colour cut in two shows its halves (still safe): not compared
        return
    assert "".join(terminal_safe(piece) for piece in pieces) == terminal_safe(whole)


def test_what_a_reader_sees() -> None:
    assert terminal_safe("a\x1b[2Jb") == "a␛[2Jb"
    assert terminal_safe("\x1b]0;owned\x07x") == "␛]0;owned␇x"
    assert terminal_safe("\x9b2J") == "<U+009B>2J"
    assert terminal_safe("abc\u202edef") == "abc<U+202E>def"
    assert terminal_safe("\x1b[31mred\x1b[0m plain") == "red plain"
    assert terminal_safe("\x1b[31mred\x1b[0m", keep_sgr=True) == "\x1b[31mred\x1b[0m"
    assert terminal_safe("10%\r20%\r\n") == "10%\n20%\n"
    assert terminal_safe("nul\x00 del\x7f") == "nul␀ del␡"
    assert terminal_safe("lone \ud800") == "lone \ufffd"
    assert terminal_safe("right\u200fleft") == "right\u200fleft"  # a bidi mark is kept
