"""Which ESC read from the terminal is the Esc key, and what a bracketed paste holds.

A terminal sends Alt+x as ESC followed by x, so Textual's parser reads ESC followed by any
character as the start of a sequence: in a burst such as ``one⏎ ESC two⏎`` (keys typed faster
than the input thread reads them, or sent in one write over ssh) the Esc became an Alt on the
next letter, or, when another ESC followed, a ``^`` typed into the prompt, and the stop was
lost. And inside a bracketed paste, an ESC in the pasted text made the parser reissue the rest
as keys, ahead of the paste itself (the text came out of order, part of it lost).

:class:`EscapeSplitter` sits between the bytes read and the parser, and decides what only the
input thread can know (what came in one read):

- an ESC followed in the same read by a character that starts no escape sequence is the Esc
  key, delivered at once, and what follows is typed after it; this also makes the first ESC of
  ESC ESC the Esc key (a double stop key in one read). The sequences kept whole are those a
  terminal sends: CSI (``[``), the OSC, APC, PM and ST replies (``]``, ``_``, ``^``, ``\\``),
  and SS3 (``O``) only as a whole key (``ESC O P`` is F1, ``ESC O A`` Up: :data:`SS3_FINALS`).
  Every other letter after ESC is Esc then that letter: ``O`` that makes no SS3 key, ``P``
  (DCS) and ``X`` (SOS), whose replies desk never asks for, included. Textual's parser read
  those as Alt+Shift+letter, and Esc then "Please..." or "OK" lost the stop and the letter;
- Alt+letter chords: while Esc is the stop key desk binds none (:mod:`desk.approval_keys`), and
  an ESC and a letter are always Esc then the letter, "y" included (Esc then ``y`` in one read
  on a busy machine once read as Alt+y, which allowed the tool call the person meant to stop).
  An app that binds Alt chords (``alt_keys``: desk's approval answers while another key stops)
  gets their letter after ESC as Alt+letter only when the two end the read, as a terminal sends
  the chord: Esc typed then ``yes, but first...`` in one burst is a stop and words;
- inside a bracketed paste (``ESC[200~`` ... ``ESC[201~``), every ESC is pasted text, shown
  as ``␛`` (U+241B) as desk shows every escape from outside; the end marker may be split across
  reads, so its start is held until the next read. A paste whose end marker never comes (a
  terminal that cut it, a stray start marker) would take every later key as pasted text, Esc,
  Ctrl+C and Ctrl+Q included: the input thread ends it after a pause in the input
  (:meth:`EscapeSplitter.end_paste`, :mod:`desk.driver`).

crossterm reads a burst the same way (a lone ESC is Esc unless more input follows and forms a
sequence).
"""

from __future__ import annotations

from dataclasses import dataclass

ESC = "\x1b"
PASTE_START = ESC + "[200~"
PASTE_END = ESC + "[201~"
SEQUENCE_STARTS = frozenset("[]_^\\")
"""Characters after ESC that begin an escape sequence a terminal sends (CSI, OSC, APC, PM, ST)."""
SS3 = "O"
"""After ESC, the start of an SS3 key (F1-F4, the arrows in application mode, the keypad)."""
SS3_FINALS = frozenset("ABCDFHPQRS")
"""Characters that end an SS3 key after ``ESC O``: the arrows, End and Home (application
cursor mode) and F1-F4 (xterm). The keypad's lower-case finals are left out: desk never turns
on the keypad's application mode, and ``ESC O k`` is Esc then "Ok" typed, not the keypad's +."""
ESC_SHOWN = "\u241b"
"""What an ESC inside pasted text becomes."""


@dataclass(frozen=True, slots=True)
class Piece:
    """Text to feed the parser, and whether its last character (an ESC) is the Esc key now.

    Attributes:
        text: the characters, in order.
        escape_key: True when ``text`` ends in an ESC that must be delivered as the Esc key
            right after feeding it (without waiting for the escape delay); with an empty
            ``text``, the ESC that ended the last read, which the parser holds.
    """

    text: str
    escape_key: bool = False


def _held_prefix(text: str, marker: str) -> int:
    """How many characters at the end of ``text`` are the start of ``marker`` (0: none)."""
    for n in range(min(len(marker) - 1, len(text)), 0, -1):
        if text.endswith(marker[:n]):
            return n
    return 0


class EscapeSplitter:
    """Splits what the input thread read into pieces for the parser (see the module).

    Not thread-safe: one per input thread.

    Args:
        alt_keys: the app's Alt bindings (``alt+y``...): ESC followed by their letter stays
            Alt+letter.
    """

    def __init__(self, alt_keys: frozenset[str] = frozenset()) -> None:
        self._alt = frozenset(
            key.removeprefix("alt+") for key in alt_keys if key.startswith("alt+") and len(key) == 5
        )
        self.in_paste = False
        """True between a bracketed paste's start and end markers."""
        self._held = ""  # inside a paste: what may be the start of its end marker
        self._tail = ""  # outside: what may be the start of a paste's start marker
        self._esc_ended = False  # the last read ended on an ESC (the parser holds it)

    def split(self, text: str) -> list[Piece]:
        """The pieces of one read, in order.

        Args:
            text: the decoded characters of one read.

        Returns:
            pieces whose texts, joined, are ``text`` (with pasted ESCs shown as ``␛``, and the
            start of a split paste end marker held back until the next read).
        """
        pieces: list[Piece] = []
        out: list[str] = []
        if self._esc_ended and text and not self._sequence_at(text, 0):
            # The ESC that ended the last read is the Esc key: the next read came at once (a
            # burst read in pieces) and starts no sequence; fed on, "two" made it Alt+t.
            pieces.append(Piece("", escape_key=True))
        self._esc_ended = False
        text, self._held = self._held + text, ""
        if self._tail and not self.in_paste:
            joined = self._tail + text
            if joined.startswith(PASTE_START):  # a paste began across two reads
                rest = len(PASTE_START) - len(self._tail)
                out.append(text[:rest])
                text = text[rest:]
                self.in_paste = True
        self._tail = ""
        i = 0
        n = len(text)
        while i < n:
            if self.in_paste:
                end = text.find(PASTE_END, i)
                if end < 0:
                    held = _held_prefix(text[i:], PASTE_END)
                    out.append(text[i : n - held].replace(ESC, ESC_SHOWN))
                    self._held = text[n - held :]
                    break
                out.append(text[i:end].replace(ESC, ESC_SHOWN))
                out.append(PASTE_END)
                i = end + len(PASTE_END)
                self.in_paste = False
                continue
            if text.startswith(PASTE_START, i):
                out.append(PASTE_START)
                i += len(PASTE_START)
                self.in_paste = True
                continue
            char = text[i]
            i += 1
            out.append(char)
            if char != ESC or i >= n:
                continue
            if self._sequence_at(text, i):
                continue  # a sequence, or a bound Alt key's chord: the parser's to read
            pieces.append(Piece("".join(out), escape_key=True))
            out = []
        if not self.in_paste:
            self._tail = text[n - _held_prefix(text, PASTE_START) :] if n else ""
            self._esc_ended = text.endswith(ESC)
        joined = "".join(out)
        if joined:  # never an empty piece: the parser reads "" as the end of its input
            pieces.append(Piece(joined))
        return pieces

    def _sequence_at(self, text: str, i: int) -> bool:
        """True when ``text[i:]``, right after an ESC, starts what the parser must read with
        it: an escape sequence a terminal sends, or a bound Alt key's chord (its letter ending
        the read)."""
        after = text[i]
        return (
            after in SEQUENCE_STARTS
            or (after == SS3 and i + 1 < len(text) and text[i + 1] in SS3_FINALS)
            or (after in self._alt and i + 1 == len(text))
        )

    def end_paste(self) -> list[Piece]:
        """End a paste whose end marker has not come (the input paused): its end marker, so
        that the parser hands over what was pasted; an ESC held as the possible start of that
        marker, alone at the end of the input, is the Esc key after the paste (any longer start
        of a marker that never came whole is dropped).

        Returns:
            the pieces to feed the parser (none when no paste is open).
        """
        if not self.in_paste:
            return []
        held, self._held = self._held, ""
        self.in_paste = False
        if held == ESC:
            return [Piece(PASTE_END + ESC, escape_key=True)]
        return [Piece(PASTE_END)]
