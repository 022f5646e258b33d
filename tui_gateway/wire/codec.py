"""Typed dataclasses <-> JSON values, for the wire contract.

:func:`encode` turns a dataclass (or a list, tuple, dict, enum of them) into JSON-ready data;
:func:`decode` checks JSON data against a type annotation and builds the typed value, raising
:class:`DecodeError` with the path of the first offending field. Supported annotations: ``str``,
``int`` (``bool`` is refused), ``float`` (an ``int`` is accepted), ``bool``, ``None``, unions,
``Literal``, ``Any``, ``list[X]``, ``tuple[X, ...]``, ``dict[str, X]``, string enums, ``str``
subclasses that parse their text (``ExitReason``) and
dataclasses (themselves made of these).

Non-finite numbers are refused everywhere a value is decoded, ``Any`` included. JSON has no NaN
or Infinity, but Python's parser reads the tokens ``NaN``, ``Infinity`` and ``-Infinity``, and a
literal too large for a double (``1e999``) becomes infinity. :func:`loads` reads them all the
same (so a request that holds one is still answered under its own id), and :func:`decode` then
refuses them like any other value that does not fit ("must be a finite number"), which a
request sees as invalid params: a ``timeout_s`` of NaN is refused as ``-5`` is, and no NaN
reaches a comparison that it would silently pass.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, Union

from agent.valid_text import JsonTooDeep as JsonTooDeep
from agent.valid_text import loads as valid_loads
from contract.events import EVENT_TYPES, GatewayEvent, Payload

T = TypeVar("T")

PAYLOAD_TYPES: dict[str, type[Payload]] = {cls.TYPE: cls for cls in EVENT_TYPES}
"""Event wire name -> payload dataclass."""


class DecodeError(ValueError):
    """JSON data that does not fit the expected type.

    Attributes:
        path: where, e.g. ``params.surface`` or ``params.events[3].seq``.
        problem: what is wrong, one line.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def loads(text: str | bytes) -> Any:
    """Parse JSON text from a client; ``NaN``, ``Infinity`` and overflowing literals become
    non-finite floats (that :func:`decode` refuses), so the caller can still answer the message.
    Every string in it is valid Unicode (:func:`agent.valid_text.loads`: a lone surrogate, which
    JSON may spell as ``"\\ud800"``, is U+FFFD; bytes that are not UTF-8 are U+FFFD).

    Raises:
        JsonTooDeep: nested deeper than the parser follows (a ``ValueError``).
        ValueError: the text is not JSON (``json.JSONDecodeError``).
    """
    return valid_loads(text)


def dumps(value: Any) -> str:
    """Compact JSON text of already JSON-ready data (UTF-8 kept, no NaN)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode(value: Any) -> Any:
    """JSON-ready data of a dataclass, enum, list, tuple, dict or scalar (recursively)."""
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [encode(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): encode(item) for key, item in value.items()}
    return value


_FIELD_TYPES: dict[type[Any], dict[str, Any]] = {}


def field_types(cls: type[Any]) -> dict[str, Any]:
    """The resolved annotations of a dataclass's fields (ClassVars left out); cached."""
    found = _FIELD_TYPES.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        found = {f.name: hints[f.name] for f in dataclasses.fields(cls)}
        _FIELD_TYPES[cls] = found
    return found


def decode(tp: Any, data: Any, *, path: str = "value", strict: bool = True) -> Any:
    """Build a value of type ``tp`` from JSON data.

    Args:
        tp: the annotation (a class, ``list[X]``, ``X | None``...).
        data: parsed JSON.
        path: where ``data`` sits, for error messages.
        strict: refuse unknown object members (False ignores them: a newer peer's fields).

    Returns:
        the typed value.

    Raises:
        DecodeError: the data does not fit, or a dataclass refused it (its ``ValueError``).
    """
    if tp is Any:
        _check_finite(data, path)
        return data
    if tp is None or tp is type(None):
        if data is not None:
            raise DecodeError(path, f"must be null, not {_kind(data)}")
        return None
    origin = typing.get_origin(tp)
    if origin is Union or origin is types.UnionType:
        return _decode_union(tp, data, path, strict)
    if origin is Literal:
        allowed = typing.get_args(tp)
        if data not in allowed or isinstance(data, bool) != isinstance(allowed[0], bool):
            raise DecodeError(path, f"must be one of {', '.join(map(dumps, allowed))}")
        return data
    if origin is list:
        (item,) = typing.get_args(tp) or (Any,)
        return [
            decode(item, x, path=f"{path}[{i}]", strict=strict)
            for i, x in enumerate(_seq(data, path))
        ]
    if origin is tuple:
        args = typing.get_args(tp)
        items = _seq(data, path)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(
                decode(args[0], x, path=f"{path}[{i}]", strict=strict) for i, x in enumerate(items)
            )
        if len(items) != len(args):
            raise DecodeError(path, f"must have {len(args)} items, not {len(items)}")
        return tuple(
            decode(a, x, path=f"{path}[{i}]", strict=strict)
            for i, (a, x) in enumerate(zip(args, items, strict=True))
        )
    if origin is dict:
        _key, item = typing.get_args(tp) or (str, Any)
        if not isinstance(data, dict):
            raise DecodeError(path, f"must be an object, not {_kind(data)}")
        return {k: decode(item, v, path=f"{path}.{k}", strict=strict) for k, v in data.items()}
    if isinstance(tp, type):
        return _decode_class(tp, data, path, strict)
    raise DecodeError(path, f"cannot decode type {tp!r}")  # pragma: no cover - a contract bug


def _decode_union(tp: Any, data: Any, path: str, strict: bool) -> Any:
    args = typing.get_args(tp)
    if data is None and type(None) in args:
        return None
    problems = []
    for arg in args:
        if arg is type(None):
            continue
        try:
            return decode(arg, data, path=path, strict=strict)
        except DecodeError as exc:
            problems.append(exc.problem)
    nullable = " or null" if type(None) in args else ""
    raise DecodeError(path, "; ".join(problems) + nullable)


def _decode_class(tp: type[Any], data: Any, path: str, strict: bool) -> Any:
    if tp is bool:
        if not isinstance(data, bool):
            raise DecodeError(path, f"must be a boolean, not {_kind(data)}")
        return data
    if tp is int:
        if not isinstance(data, int) or isinstance(data, bool):
            raise DecodeError(path, f"must be an integer, not {_kind(data)}")
        return data
    if tp is float:
        if not isinstance(data, int | float) or isinstance(data, bool):
            raise DecodeError(path, f"must be a number, not {_kind(data)}")
        _check_finite(data, path)
        return float(data)
    if tp is str:
        if not isinstance(data, str):
            raise DecodeError(path, f"must be a string, not {_kind(data)}")
        return data
    if issubclass(tp, enum.Enum):
        try:
            return tp(data)
        except ValueError:
            allowed = ", ".join(dumps(m.value) for m in tp)
            raise DecodeError(path, f"must be one of {allowed}") from None
    if issubclass(tp, str):  # a string of closed forms (ExitReason) parses itself
        if not isinstance(data, str):
            raise DecodeError(path, f"must be a string, not {_kind(data)}")
        try:
            return tp(data)
        except ValueError as exc:
            raise DecodeError(path, str(exc)) from None
    if dataclasses.is_dataclass(tp):
        return _decode_dataclass(tp, data, path, strict)
    raise DecodeError(path, f"cannot decode type {tp.__name__}")  # pragma: no cover


def _decode_dataclass(tp: type[T], data: Any, path: str, strict: bool) -> T:
    if not isinstance(data, dict):
        raise DecodeError(path, f"must be an object, not {_kind(data)}")
    hints = field_types(tp)
    if strict:
        unknown = sorted(set(data) - set(hints))
        if unknown:
            raise DecodeError(f"{path}.{unknown[0]}", "is not a known member")
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(tp):  # type: ignore[arg-type]
        if not f.init:
            continue
        if f.name in data:
            kwargs[f.name] = decode(
                hints[f.name], data[f.name], path=f"{path}.{f.name}", strict=strict
            )
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise DecodeError(f"{path}.{f.name}", "is required")
    try:
        return tp(**kwargs)
    except (TypeError, ValueError) as exc:
        raise DecodeError(path, str(exc)) from exc


def _check_finite(data: Any, path: str) -> None:
    """DecodeError for a NaN or an infinity anywhere in ``data`` (containers walked)."""
    if isinstance(data, float):
        if not math.isfinite(data):
            name = "NaN" if math.isnan(data) else "Infinity" if data > 0 else "-Infinity"
            raise DecodeError(path, f"must be a finite number, not {name}")
    elif isinstance(data, list):
        for i, item in enumerate(data):
            _check_finite(item, f"{path}[{i}]")
    elif isinstance(data, dict):
        for key, item in data.items():
            _check_finite(item, f"{path}.{key}")


def _seq(data: Any, path: str) -> list[Any]:
    if not isinstance(data, list):
        raise DecodeError(path, f"must be an array, not {_kind(data)}")
    return data


def _kind(data: Any) -> str:
    if data is None:
        return "null"
    if isinstance(data, bool):
        return "a boolean"
    if isinstance(data, int | float):
        return "a number"
    if isinstance(data, str):
        return "a string"
    if isinstance(data, list):
        return "an array"
    return "an object"


def event_params(event: GatewayEvent) -> dict[str, Any]:
    """The ``params`` of an event notification: ``{type, session_id, seq, payload}``."""
    params: dict[str, Any] = event.to_wire()["params"]
    return params


def decode_event(params: Any, *, path: str = "params") -> GatewayEvent | None:
    """The :class:`GatewayEvent` of an event notification's ``params``.

    Members a newer gateway added are ignored; an event type this side does not know gives
    None (skip it).

    Raises:
        DecodeError: the envelope or a known payload does not fit.
    """
    if not isinstance(params, dict):
        raise DecodeError(path, f"must be an object, not {_kind(params)}")
    kind = decode(str, params.get("type"), path=f"{path}.type")
    session_id = decode(str, params.get("session_id"), path=f"{path}.session_id")
    seq = decode(int, params.get("seq"), path=f"{path}.seq")
    cls = PAYLOAD_TYPES.get(kind)
    if cls is None:
        return None
    raw = params.get("payload")
    if not isinstance(raw, dict):
        raise DecodeError(f"{path}.payload", f"must be an object, not {_kind(raw)}")
    fields = {k: v for k, v in raw.items() if k != "version"}
    payload = decode(cls, fields, path=f"{path}.payload", strict=False)
    return GatewayEvent(type=kind, session_id=session_id, seq=seq, payload=payload)
