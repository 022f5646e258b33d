"""The fast-Esc driver's input wait, that the app picks it only for a real Linux terminal, and
what its input thread makes of the bytes read (pastes, unknown sequences)."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from textual import constants, events
from textual._time import get_time
from textual.message import Message

from desk.app import DeskApp
from desk.config import ConnectionInfo
from desk.driver import IDLE_WAIT_S, FastEscapeDriver, feed_keys, feed_pieces, input_wait_s
from desk.escape_split import ESC, ESC_SHOWN, PASTE_END, PASTE_START, EscapeSplitter
from desk.key_parser import DeskParser


def test_wait_is_the_idle_wait_when_no_escape_is_pending() -> None:
    assert input_wait_s(None, now=5.0) == IDLE_WAIT_S == 0.1


def test_wait_ends_at_the_pending_escape_deadline() -> None:
    assert input_wait_s(5.010, now=5.0) == pytest.approx(0.010)
    assert input_wait_s(4.9, now=5.0) == 0.0  # overdue: do not block at all
    assert input_wait_s(9.0, now=5.0) == IDLE_WAIT_S  # never longer than the idle wait


class _NoGateway:
    running_turns = 0


def test_app_sets_the_escape_delay_and_uses_the_driver_on_linux(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(constants, "ESCAPE_DELAY", 0.1)
    monkeypatch.setattr(constants, "DRIVER", None)
    app = DeskApp(_NoGateway(), ConnectionInfo("m", "http://x/v1"), escape_delay_ms=10)  # type: ignore[arg-type]
    assert abs(constants.ESCAPE_DELAY - 0.010) < 1e-9
    if sys.platform.startswith("linux"):
        assert app.get_driver_class() is FastEscapeDriver


def test_an_explicit_textual_driver_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(constants, "DRIVER", "textual.drivers.linux_driver:LinuxDriver")
    app = DeskApp(_NoGateway(), ConnectionInfo("m", "http://x/v1"))  # type: ignore[arg-type]
    assert app.get_driver_class() is not FastEscapeDriver


def parse(*reads: str, pause_after: int | None = None) -> list[Message]:
    """What the input thread makes of ``reads``, each read alone (an ESC ending one is the Esc
    key, as the driver reads it), with the paste-ending pause after read ``pause_after``."""
    parser, splitter, out = DeskParser(), EscapeSplitter(), list[Message]()
    for index, read in enumerate(reads):
        feed_keys(read, parser, splitter, out.append)
        if read.endswith(ESC) and not splitter.in_paste and parser._timeout_time is not None:
            parser._timeout_time = get_time()
            out.extend(parser.tick())
        if index == pause_after:
            feed_pieces(splitter.end_paste(), parser, out.append)
    out.extend(parser.tick())
    return out


def keys(messages: list[Message]) -> list[str]:
    return [m.key for m in messages if isinstance(m, events.Key)]


def test_a_paste_that_never_ends_hands_over_its_text_and_the_keys_after_it_work() -> None:
    got = parse(PASTE_START + "abc", ESC, "y" + ESC, "\x11", pause_after=1)
    pastes = [m.text for m in got if isinstance(m, events.Paste)]
    assert pastes == ["abc"]
    assert keys(got) == ["escape", "y", "escape", "ctrl+q"]


def read_at_once(*reads: str) -> list[Message]:
    """What the input thread makes of ``reads`` when each came readable right after the last
    (no escape delay waited between them)."""
    parser, splitter, out = DeskParser(), EscapeSplitter(), list[Message]()
    for read in reads:
        feed_keys(read, parser, splitter, out.append)
    if parser._timeout_time is not None:
        parser._timeout_time = get_time()
    out.extend(parser.tick())
    return out


def test_an_esc_that_ends_a_read_is_the_esc_key_when_the_next_read_starts_no_sequence() -> None:
    # one⏎ Esc two⏎ Esc three⏎ read in pieces, each readable at once: the parser held the ESC
    # that ended a read and made Alt+t of it and the next "t": the stop was lost, two ran.
    got = read_at_once("one\r" + ESC, "two\r" + ESC, "three\r")
    assert keys(got) == [*"one", "enter", "escape", *"two", "enter", "escape", *"three", "enter"]


def test_a_sequence_split_after_its_esc_stays_one_key() -> None:
    assert keys(read_at_once(ESC, "[A", ESC, "OP", ESC, "[200~hi" + PASTE_END)) == ["up", "f1"]


def test_keys_inside_a_real_paste_are_never_keys() -> None:
    # the stop keys' fast path sees only key events: none may come out of pasted bytes
    pasted = "a" + ESC + "b" + ESC + ESC + "\x03c\x11" + ESC
    got = parse(PASTE_START + pasted[:4], pasted[4:] + PASTE_END[:2], PASTE_END[2:] + ESC)
    assert [m.text for m in got if isinstance(m, events.Paste)] == [pasted.replace(ESC, ESC_SHOWN)]
    assert keys(got) == ["escape"]  # only the Esc typed after the paste


@pytest.mark.parametrize("sequence", [ESC + "[999~", ESC + "[57~", ESC + "[57;5~", ESC + "[88A"])
def test_an_unknown_sequence_types_nothing(sequence: str) -> None:
    assert keys(parse("x" + sequence + "y")) == ["x", "y"]


@pytest.mark.parametrize(
    ("sequence", "key"),
    [
        (ESC + "[5~", "pageup"),
        (ESC + "[25~", "f13"),
        (ESC + "[A", "up"),
        (ESC + "[1;5A", "ctrl+up"),
        (ESC + "[97u", "a"),
        (ESC + "[97;5u", "ctrl+a"),
        (ESC + "[Z", "shift+tab"),
    ],
)
def test_known_keys_stay_keys(sequence: str, key: str) -> None:
    assert keys(parse(sequence)) == [key]


@settings(deadline=None, max_examples=300)
@given(
    st.lists(
        st.lists(
            st.sampled_from(
                [ESC, "[", "200~", "201~", "9", ";", ":", "~", "u", "A", "\x03", "a", "\r"]
                + [PASTE_START, PASTE_END, ESC + "[9999999u", ESC + "[1:2u"]
            ),
            max_size=8,
        ).map("".join),
        max_size=12,
    ),
    st.one_of(st.none(), st.integers(0, 11)),
)
def test_no_input_ever_raises(reads: list[str], pause_after: int | None) -> None:
    parse(*reads, pause_after=pause_after)
