"""Text from outside made valid Unicode where it enters: no lone surrogate gets in.

JSON may spell any UTF-16 code unit as an escape, so ``"\\ud800"`` is valid JSON text, and
Python's parser gives it back as a ``str`` holding a lone surrogate. Python reads a command
line, an environment variable or a file name it cannot decode the same way (``surrogateescape``:
the byte 0xFF becomes U+DCFF). Such a string is not Unicode text: it cannot be encoded as UTF-8,
so the first write of it (to SQLite, to a JSON line on stdout, to a file) raises
``UnicodeEncodeError`` wherever that happens to be, often on a thread that then dies.

So every string that comes from outside (a model server's reply, a client's request, a tool's
output, an MCP server's answer, a file) passes :func:`valid_text` (or :func:`valid_json` for a
parsed value, or :func:`loads` for JSON text) once, where it enters, and everything behind that
point may take it for valid UTF-8:

* a surrogate pair (a high surrogate followed by a low one, as two code points) becomes the one
  character it stands for;
* every other surrogate, high or low, becomes U+FFFD, the replacement character, as an invalid
  byte is when bytes are decoded with ``errors="replace"``.

In a Python ``str``, surrogates are the only code points UTF-8 cannot hold (every other code
point up to U+10FFFF, noncharacters and NUL included, has a UTF-8 form), so the result always
encodes. Text without a surrogate is returned unchanged, as the same object, after one
regular-expression scan.
"""

from __future__ import annotations

import json
import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_OR_ESCAPE = re.compile(r"[\ud800-\udfff]|\\u[dD][89a-fA-F]")

REPLACEMENT = "\ufffd"
"""What a lone surrogate becomes: U+FFFD REPLACEMENT CHARACTER."""


class JsonTooDeep(ValueError):
    """JSON text nested deeper than Python's parser can follow (arrays or objects inside each
    other some thousand levels deep)."""


def valid_text(text: str) -> str:
    """``text`` as valid Unicode: surrogate pairs joined, every lone surrogate made U+FFFD.

    Args:
        text: any string, e.g. parsed from JSON or decoded with ``surrogateescape``.

    Returns:
        a string that encodes as UTF-8; ``text`` itself when it holds no surrogate.
    """
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def is_valid_text(text: str) -> bool:
    """True when ``text`` holds no surrogate (:func:`valid_text` returns it unchanged)."""
    return _SURROGATE.search(text) is None


def valid_json(value: Any) -> Any:
    """A parsed JSON value (dicts, lists, strings, numbers, booleans, None) with every string in
    it, object keys included, passed through :func:`valid_text`.

    Values without a surrogate anywhere are returned as they are (the same objects); the walk
    uses no recursion, so any depth the parser produced is fine.
    """
    if isinstance(value, str):
        return valid_text(value)
    if not isinstance(value, dict | list):
        return value
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            for index, element in enumerate(item):
                if isinstance(element, str):
                    item[index] = valid_text(element)
                elif isinstance(element, dict | list):
                    stack.append(element)
        else:
            for key in [k for k in item if isinstance(k, str) and not is_valid_text(k)]:
                item[valid_text(key)] = item.pop(key)
            for key, element in item.items():
                if isinstance(element, str):
                    item[key] = valid_text(element)
                elif isinstance(element, dict | list):
                    stack.append(element)
    return value


def loads(data: str | bytes | bytearray | memoryview) -> Any:
    """Parse JSON text from outside into a value whose strings are all valid (see the module
    docstring); bytes are decoded as UTF-8 with every invalid byte made U+FFFD.

    ``NaN``, ``Infinity`` and overflowing literals are read as Python's parser reads them
    (non-finite floats); a caller that must refuse them checks.

    Returns:
        the value.

    Raises:
        JsonTooDeep: nesting deeper than the parser follows (a ``ValueError``).
        ValueError: the text is not JSON (``json.JSONDecodeError``).
    """
    if isinstance(data, bytes | bytearray | memoryview):
        text = bytes(data).decode("utf-8", "replace").removeprefix("\ufeff")
    else:
        text = data
    try:
        value = json.loads(text)
    except RecursionError:
        raise JsonTooDeep("the JSON is nested too deeply to be read") from None
    if _SURROGATE_OR_ESCAPE.search(text) is None:
        return value
    return valid_json(value)


__all__ = ["REPLACEMENT", "JsonTooDeep", "is_valid_text", "loads", "valid_json", "valid_text"]
