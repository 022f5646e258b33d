"""Which ESC of a read is the Esc key, and what a bracketed paste keeps (desk.escape_split)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from desk.escape_split import ESC, ESC_SHOWN, PASTE_END, PASTE_START, EscapeSplitter, Piece

ALT = frozenset({"alt+y", "alt+a", "alt+n"})
"""Alt chords an app binds (desk's approval answers, while Esc is not the stop key)."""


def test_esc_then_the_next_prompt_in_one_read_is_the_esc_key_then_the_typing() -> None:
    pieces = EscapeSplitter(ALT).split("one\r" + ESC + "two\r" + ESC + "three\r")
    assert pieces == [
        Piece("one\r" + ESC, escape_key=True),
        Piece("two\r" + ESC, escape_key=True),
        Piece("three\r"),
    ]


def test_two_escs_in_one_read_are_two_esc_keys() -> None:
    assert EscapeSplitter(ALT).split(ESC + ESC) == [Piece(ESC, escape_key=True), Piece(ESC)]


def test_sequences_and_bound_alt_keys_stay_whole() -> None:
    splitter = EscapeSplitter(ALT)
    for text in (ESC + "[A", ESC + "OP", ESC + "y", ESC + "[<0;10;5M", ESC + "]0;t\x07"):
        assert splitter.split(text) == [Piece(text)]


def test_with_no_alt_key_bound_esc_and_a_letter_in_one_read_are_esc_then_the_letter() -> None:
    # Esc is the stop key: desk binds no Alt chord, and Esc then "y" read at once is a stop
    # and a "y" typed, never Alt+y ("allow once")
    for letter in "yanzYAN":
        assert EscapeSplitter().split(ESC + letter) == [
            Piece(ESC, escape_key=True),
            Piece(letter),
        ]


def test_letters_that_start_no_key_a_terminal_sends_are_esc_then_the_letter() -> None:
    # O that makes no SS3 key, P (DCS) and X (SOS): the parser read them as Alt+Shift+letter,
    # and Esc then "Please stop" or "OK" lost the stop and the letter
    for words in ("Please stop", "OK", "Ok", "Oops", "X marks", "O", "P"):
        assert EscapeSplitter().split(ESC + words) == [Piece(ESC, escape_key=True), Piece(words)]
    for key in ("OA", "OB", "OC", "OD", "OF", "OH", "OP", "OQ", "OR", "OS"):  # arrows, F1-F4
        assert EscapeSplitter().split(ESC + key) == [Piece(ESC + key)]


def test_esc_then_words_starting_with_an_alt_letter_is_the_esc_key_then_the_words() -> None:
    # "yes but first" after Esc, read at once on a busy machine: a stop, never Alt+y (allow)
    for words in ("yes but first", "apple", "nope", "and then"):
        pieces = EscapeSplitter(ALT).split(ESC + words)
        assert pieces == [Piece(ESC, escape_key=True), Piece(words)]


def test_a_paste_keeps_its_escs_as_text_in_order() -> None:
    pasted = "first " + ESC + "[31m red " + ESC + "]0;pwned\x07B"
    pieces = EscapeSplitter(ALT).split(PASTE_START + pasted + PASTE_END + "x")
    assert pieces == [Piece(PASTE_START + pasted.replace(ESC, ESC_SHOWN) + PASTE_END + "x")]


def test_a_paste_split_across_reads_holds_its_end_marker_until_it_is_whole() -> None:
    splitter = EscapeSplitter(ALT)
    first = splitter.split(PASTE_START[:3])  # the start marker itself split across reads
    second = splitter.split(PASTE_START[3:] + "a" + ESC + "b" + PASTE_END[:4])
    assert splitter.in_paste
    third = splitter.split(PASTE_END[4:] + ESC + "q")
    text = "".join(p.text for p in first + second + third)
    assert text == PASTE_START + "a" + ESC_SHOWN + "b" + PASTE_END + ESC + "q"
    assert [p.escape_key for p in first + second] == [False] * len(first + second)
    assert third[0] == Piece(PASTE_END + ESC, escape_key=True)


@settings(deadline=None, max_examples=100)
@given(st.lists(st.text(alphabet=st.sampled_from(["a", "y", "[", "\r", ESC, "2", "0", "~"]))))
def test_pieces_keep_every_character_in_order(reads: list[str]) -> None:
    splitter = EscapeSplitter(ALT)
    fed = "".join(p.text for read in reads for p in splitter.split(read))
    whole = "".join(reads)
    # Outside pastes nothing changes; inside, an ESC is shown as ␛ (never dropped, never moved).
    assert fed.replace(ESC_SHOWN, ESC) == whole[: len(fed)]
    assert len(whole) - len(fed) < len(PASTE_END)  # at most a held end marker's start


def test_an_esc_read_alone_inside_a_paste_makes_no_empty_piece() -> None:
    # an empty piece is the end of the parser's input: the next key crashed the app
    splitter = EscapeSplitter()
    assert splitter.split(PASTE_START + "abc") == [Piece(PASTE_START + "abc")]
    assert splitter.split(ESC) == []  # held: it may start the end marker
    assert all(p.text for read in ("x", ESC, "[2", "0") for p in splitter.split(read))


def test_a_paste_whose_end_never_comes_ends_when_the_input_pauses() -> None:
    splitter = EscapeSplitter()
    splitter.split(PASTE_START + "abc typed\r")
    assert splitter.end_paste() == [Piece(PASTE_END)]
    assert not splitter.in_paste
    assert splitter.split(ESC) == [Piece(ESC)]  # a key again (the driver delivers it at once)
    assert splitter.end_paste() == []  # no paste open: nothing to end


def test_an_esc_held_when_a_paste_ends_by_itself_is_the_esc_key_after_it() -> None:
    splitter = EscapeSplitter()
    splitter.split(PASTE_START + "abc")
    splitter.split(ESC)  # Esc typed while the paste still waited for its end
    assert splitter.end_paste() == [Piece(PASTE_END + ESC, escape_key=True)]
    splitter.split(PASTE_START + "abc" + PASTE_END[:3])  # the end marker cut short
    assert splitter.end_paste() == [Piece(PASTE_END)]  # its start is dropped, not typed
