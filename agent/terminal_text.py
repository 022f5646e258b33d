"""Text from outside made safe to show on a terminal: no control character gets through.

A model reply, a tool's output, a file, a server's error message or a session title is shown on
the person's terminal (the desk's screen, ``desk run``'s stdout, an exported file someone will
``cat``). Raw control characters there are commands to the terminal, not text: ``ESC [ 2 J``
clears the screen, ``ESC ] 0 ; ... BEL`` sets the window title, ``ESC ] 52`` writes the
clipboard, ``ESC ] 8`` makes a link whose text lies about its target, ``ESC [ ? 1049 l`` leaves
the alternate screen, ``ESC [ ? 1000 h`` turns on mouse tracking, ``ESC c`` resets the terminal,
and a lone carriage return lets later text overwrite what came before it. The Unicode bidi
embeddings, overrides and isolates reorder what is shown so that it reads otherwise than it is
("Trojan Source", CVE-2021-42574).

:func:`terminal_safe` keeps every printable character and makes each of those visible instead,
one character at a time, so that a person reading a transcript sees that something was there
and what it was:

* C0 controls (U+0000-U+001F) other than tab and newline, and DEL (U+007F), become their Unicode
  control pictures: ESC is ``␛``, BEL ``␇``, NUL ``␀``, DEL ``␡``. The printable rest of an
  escape sequence stays as it was, so a screen clear reads ``␛[2J`` and a title set
  ``␛]0;title␇``, whatever kind of sequence it is (CSI, OSC, DCS, APC, PM, SOS) and however it is
  terminated.
* C1 controls (U+0080-U+009F, e.g. the one-character CSI U+009B) and the bidi controls
  (U+202A-U+202E, U+2066-U+2069) have no pictures: they become ``<U+009B>``, ``<U+202E>``.
* A lone surrogate (U+D800-U+DFFF, possible in JSON text) cannot be written to a UTF-8
  terminal at all: it becomes U+FFFD.
* Carriage returns: ``\\r\\n`` becomes ``\\n``, and a lone ``\\r`` (which would let what follows
  overwrite the line) becomes ``\\n`` too, so every state of a progress line is shown.
* SGR sequences (``ESC [ <digits ; :> m``: colours and text attributes, which carry no text)
  are removed, or kept as they are with ``keep_sgr=True`` for a renderer that turns them into
  colours (Rich's ``Text.from_ansi``).

The mapping works character by character, so text streamed in pieces reads the same as the
whole text, except for a ``\\r\\n`` or an SGR sequence cut in two (its halves are then shown
as their characters, which is still safe). Printable text (no character above) is returned
unchanged, as the same object, after one regular-expression scan.

The bidi *marks* (U+200E, U+200F, U+061C) are kept: they are invisible, used in ordinary
right-to-left text, and cannot move a run of text the way an override does.
"""

from __future__ import annotations

import re

_UNSAFE_CLASS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE = re.compile(f"[{_UNSAFE_CLASS}]")
_SGR = re.compile(r"(?:\x1b\[|\x9b)[0-9;:]*m")
_LONE_CR = re.compile(r"\r\n?")


def _picture(code: int) -> str:
    if code < 0x20:
        return chr(0x2400 + code)  # the control pictures block: U+2400 NUL ... U+241F US
    if code == 0x7F:
        return "\u2421"  # ␡
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    return f"<U+{code:04X}>"


_PICTURES: dict[int, str] = {
    code: _picture(code)
    for code in (*range(0x00, 0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F))
    if code not in (0x09, 0x0A)
}
_PICTURES.update({code: _picture(code) for code in range(0x2066, 0x206A)})
_PICTURES.update({code: "\ufffd" for code in range(0xD800, 0xE000)})


def terminal_safe(text: str, *, keep_sgr: bool = False) -> str:
    """``text`` with every control character made visible (see the module docstring).

    Args:
        text: any text, e.g. a reply, a tool's output, a title, an error message.
        keep_sgr: keep well-formed SGR sequences (colours) as they are, for a renderer that
            decodes them; every other control character is still made visible.

    Returns:
        text that holds no C0 control but tab and newline, no DEL, no C1 control, no ESC
        (except inside an SGR sequence with ``keep_sgr``), no bidi embedding, override or
        isolate, and no lone surrogate. Printable text comes back unchanged.
    """
    if _UNSAFE.search(text) is None:
        return text
    if "\r" in text:
        text = _LONE_CR.sub("\n", text)
    if not keep_sgr:
        return _SGR.sub("", text).translate(_PICTURES)
    parts = _SGR.split(text)
    kept = _SGR.findall(text)
    out = [parts[0].translate(_PICTURES)]
    for sgr, part in zip(kept, parts[1:], strict=True):
        out.append(sgr.replace("\x9b", "\x1b["))  # the one-character CSI as the two ESC [
        out.append(part.translate(_PICTURES))
    return "".join(out)


def is_terminal_safe(text: str) -> bool:
    """True when ``text`` holds nothing :func:`terminal_safe` would change (SGR included)."""
    return _UNSAFE.search(text) is None


__all__ = ["is_terminal_safe", "terminal_safe"]
