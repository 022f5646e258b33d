"""Text that PostgreSQL cannot hold as it is: a NUL character, kept through a reversible form.

SQLite stores any string; PostgreSQL's ``text`` refuses the NUL character (U+0000), which a
model's reply, a tool's output of a binary file or a pasted prompt may contain. Losing or
refusing such a write would break "nothing the person saw is lost", so every string this
store sends passes :func:`encode` and every ``text`` value it reads passes :func:`decode`
(:func:`prepare` installs both on a connection): a string with a NUL, or one that happens to
begin with the marker :data:`MARK`, is stored as the marker followed by its JSON form (where
NUL is ``\\u0000``); every other string is stored unchanged, so the database stays readable.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
from psycopg.types.string import StrDumperUnknown, TextLoader

MARK = "\ufdd0"
"""A Unicode noncharacter that begins every encoded string."""

_MARK_BYTES = MARK.encode("utf-8")


def encode(text: str) -> str:
    """``text`` in a form PostgreSQL's ``text`` takes (unchanged unless it holds a NUL or
    begins with :data:`MARK`)."""
    if "\x00" in text or text.startswith(MARK):
        return MARK + json.dumps(text, ensure_ascii=False)
    return text


def decode(text: str) -> str:
    """What :func:`encode` was given."""
    if text.startswith(MARK):
        value = json.loads(text[len(MARK) :])
        if isinstance(value, str):
            return value
    return text


class _Dumper(StrDumperUnknown):
    def dump(self, obj: str) -> Any:
        return super().dump(encode(obj))


class _Loader(TextLoader):
    def load(self, data: Any) -> Any:
        if bytes(data[: len(_MARK_BYTES)]) == _MARK_BYTES:
            return decode(bytes(data).decode("utf-8"))
        return super().load(data)


def prepare(conn: psycopg.Connection[Any]) -> None:
    """Send every ``str`` of ``conn`` through :func:`encode`, read every ``text`` through
    :func:`decode`."""
    conn.adapters.register_dumper(str, _Dumper)
    conn.adapters.register_loader("text", _Loader)
