"""The contract as a JSON Schema (2020-12): every method's params and result, every event.

Generated from the same dataclasses the codec (:mod:`tui_gateway.wire.codec`) decodes, with the
codec's rules: ``int`` is ``integer`` (a boolean is not one), ``float`` is ``number``, a string
enum or a ``Literal`` is an ``enum``, an ``ExitReason`` a string ``pattern`` of its five forms,
``X | None`` also allows ``null``, a member with a default is not required, and an object the
codec decodes strictly (every params object and what it holds) has
``additionalProperties: false``; results and event payloads are read leniently (a
newer gateway may add members), so their objects stay open. Descriptions come from the
dataclasses' docstrings.

The document (``docs/protocol.schema.json``)::

    {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": ..., "$defs": {...},
     "methods": {"session.create": {"description", "params": {"$ref"}, "result": {"$ref"}}, ...},
     "notifications": {"gateway.ready": {"$ref"}, "event": {"$ref"}},
     "events": {"message.delta": {"$ref"}, ...},
     "run": {"turn.completed": {"description", "$ref"}, ...},
     "anyOf": [one message, or a batch of them]}

Its root accepts any one JSON-RPC line of a stdio session: a request (``Request``: the method's
params checked), a notification the gateway sends (``Notification``: ``gateway.ready`` or an
``event`` whose payload is checked by its ``type``), a response (``Response``: its ``result``
is checked against ``methods.<name>.result`` by whoever knows which request it answers), or a
batch. A line of ``desk run --json`` is checked by ``$defs/RunLine`` (its payload by its
``type``; ``run.<type>`` is that payload alone). Regenerate with
``python -m tui_gateway.wire.contract_docs --schema``.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any, Literal

import contract as c
from contract.events import EVENT_TYPES, PROTOCOL_VERSION, Payload
from tui_gateway.wire.codec import encode, field_types
from tui_gateway.wire.docstrings import doc_parts, plain

DIALECT = "https://json-schema.org/draft/2020-12/schema"
"""The JSON Schema dialect of the document."""

SCHEMA_ID = "urn:desk:gateway-protocol"
"""The document's ``$id`` (a name, not a place to fetch it from)."""

_JSON_ID: dict[str, Any] = {"type": ["string", "integer", "null"]}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/$defs/{name}"}


def _dataclasses_in(tp: Any, seen: frozenset[type[Any]] = frozenset()) -> Iterator[type[Any]]:
    """Every dataclass an annotation names, itself and the ones its members hold (a type that
    holds itself, such as ``TranscriptEntry``, is followed once)."""
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if tp in seen:
            return
        yield tp
        for member in field_types(tp).values():
            yield from _dataclasses_in(member, seen | {tp})
        return
    for arg in typing.get_args(tp):
        yield from _dataclasses_in(arg, seen)


class _Builder:
    """Collects the ``$defs`` while it turns annotations into schemas."""

    def __init__(self, strict: set[type[Any]], plain_payloads: set[type[Any]]) -> None:
        self.defs: dict[str, dict[str, Any]] = {}
        self._owners: dict[str, tuple[type[Any], str]] = {}
        self._strict = strict
        self._plain_payloads = plain_payloads

    def define(
        self, name: str, owner: type[Any], make: Callable[[], dict[str, Any]], kind: str = "value"
    ) -> str:
        """Add ``$defs[name]`` once (``make`` builds it), refusing two types of one name, and
        one type defined twice under one name as two kinds (a payload and a value, say).

        Raises:
            ValueError: ``name`` is taken by another type, or by ``owner`` as another kind.
        """
        known = self._owners.get(name)
        if known is not None:
            if known != (owner, kind):
                raise ValueError(f"two definitions are called {name}: {known!r}, {(owner, kind)!r}")
            return name
        self._owners[name] = (owner, kind)
        self.defs[name] = {}  # reserved first: a type may hold itself
        self.defs[name] = make()
        return name

    def of(self, tp: Any) -> dict[str, Any]:
        """The schema of an annotation the codec decodes."""
        if tp is Any:
            return {}
        if tp is None or tp is type(None):
            return {"type": "null"}
        origin = typing.get_origin(tp)
        if origin is typing.Union or origin is types.UnionType:
            return _union([self.of(arg) for arg in typing.get_args(tp)])
        if origin is Literal:
            return _enum(list(typing.get_args(tp)))
        if origin is list:
            (item,) = typing.get_args(tp) or (Any,)
            return {"type": "array", "items": self.of(item)}
        if origin is tuple:
            args = typing.get_args(tp)
            if len(args) == 2 and args[1] is Ellipsis:
                return {"type": "array", "items": self.of(args[0])}
            return {
                "type": "array",
                "prefixItems": [self.of(a) for a in args],
                "items": False,
                "minItems": len(args),
            }
        if origin is dict:
            _key, item = typing.get_args(tp) or (str, Any)
            value = self.of(item)
            if not value:  # dict[str, Any]: any members
                return {"type": "object"}
            return {"type": "object", "additionalProperties": value}
        scalars = {bool: "boolean", int: "integer", float: "number", str: "string"}
        if tp in scalars:
            return {"type": scalars[tp]}
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return _ref(self.define(tp.__name__, tp, lambda: self._enum_def(tp)))
        if isinstance(tp, type) and issubclass(tp, str):  # closed forms: ExitReason
            return _ref(self.define(tp.__name__, tp, lambda: self._pattern_def(tp)))
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            if tp is c.WireEvent:
                return _ref(self.define(tp.__name__, tp, self._wire_event))
            return _ref(self.define(tp.__name__, tp, lambda: self._object(tp)))
        raise TypeError(f"no JSON Schema for {tp!r}")  # pragma: no cover - a contract bug

    def _enum_def(self, tp: type[enum.Enum]) -> dict[str, Any]:
        summary, _ = doc_parts(tp)
        out = _enum([m.value for m in tp])
        if summary:
            out = {"description": plain(summary), **out}
        return out

    def _pattern_def(self, tp: type[str]) -> dict[str, Any]:
        summary, _ = doc_parts(tp)
        out: dict[str, Any] = {"type": "string", "pattern": getattr(tp, "PATTERN", ".*")}
        if summary:
            out = {"description": plain(summary), **out}
        return out

    def _object(self, tp: type[Any], extra: dict[str, Any] | None = None) -> dict[str, Any]:
        summary, attrs = doc_parts(tp)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for f in dataclasses.fields(tp):
            member = dict(self.of(field_types(tp)[f.name]))
            if attrs.get(f.name):
                member["description"] = plain(attrs[f.name])
            if f.default is not dataclasses.MISSING:
                member["default"] = encode(f.default)
            elif f.default_factory is not dataclasses.MISSING:
                member["default"] = encode(f.default_factory())
            else:
                required.append(f.name)
            properties[f.name] = member
        for name, member in (extra or {}).items():
            properties[name] = member
            required.append(name)
        out: dict[str, Any] = {"title": tp.__name__}
        if summary:
            out["description"] = plain(summary)
        out["type"] = "object"
        out["properties"] = properties
        if required:
            out["required"] = required
        if tp in self._strict:
            out["additionalProperties"] = False
        return out

    def payload(self, cls: type[Payload]) -> str:
        """``$defs`` name of an event payload (its members and its ``version``): the class's
        name, or ``<name>Payload`` for a class also sent as a plain value (a result, a member),
        which has no ``version`` and keeps the class's name."""
        version = {
            "const": PROTOCOL_VERSION,
            "description": "the protocol version of the payload's shape",
        }
        name = cls.__name__ + ("Payload" if cls in self._plain_payloads else "")
        return self.define(
            name, cls, lambda: self._object(cls, {"version": version}), kind="payload"
        )

    def _wire_event(self) -> dict[str, Any]:
        summary, attrs = doc_parts(c.WireEvent)
        kinds = []
        for cls in EVENT_TYPES:
            payload = self.payload(cls)

            def envelope(cls: type[Payload] = cls, payload: str = payload) -> dict[str, Any]:
                return {
                    "title": f"{cls.TYPE} event",
                    "type": "object",
                    "properties": {
                        "type": {"const": cls.TYPE, "description": attrs["type"]},
                        "session_id": {"type": "string", "description": attrs["session_id"]},
                        "seq": {"type": "integer", "description": attrs["seq"]},
                        "payload": _ref(payload),
                    },
                    "required": ["type", "session_id", "seq", "payload"],
                }

            kinds.append(_ref(self.define(f"{cls.__name__}Event", cls, envelope)))
        return {"title": "WireEvent", "description": plain(summary), "oneOf": kinds}


def _union(parts: list[dict[str, Any]]) -> dict[str, Any]:
    if all(set(p) == {"type"} and isinstance(p["type"], str) for p in parts):
        return {"type": [p["type"] for p in parts]}
    return {"anyOf": parts}


def _enum(values: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"enum": values}
    if values and all(isinstance(v, str) for v in values):
        out = {"type": "string", **out}
    return out


def _request(builder: _Builder, method: c.Method[Any, Any]) -> dict[str, Any]:
    params = builder.of(method.params)
    needs_params = any(
        f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        for f in dataclasses.fields(method.params)
    )
    required = ["jsonrpc", "method"] + (["params"] if needs_params else [])
    return {
        "title": f"{method.name} request",
        "type": "object",
        "properties": {
            "jsonrpc": {"const": "2.0"},
            "id": _JSON_ID,
            "method": {"const": method.name},
            "params": params,
        },
        "required": required,
        "additionalProperties": False,
    }


def _run_lines(builder: _Builder) -> dict[str, Any]:
    """``run.<type>`` (each line's payload) and ``$defs/RunLine`` (any line of
    ``desk run --json``)."""
    summary, attrs = doc_parts(c.RunLine)
    run: dict[str, Any] = {}
    kinds = []
    for kind in c.RUN_EVENTS:
        payload = builder.payload(kind.payload)
        run[kind.name] = {"description": kind.summary, **_ref(payload)}
        kinds.append(
            {
                "title": f"{kind.name} line",
                "description": kind.summary,
                "type": "object",
                "properties": {
                    "type": {"const": kind.name, "description": attrs["type"]},
                    "session_id": {"type": "string", "description": attrs["session_id"]},
                    "payload": _ref(payload),
                },
                "required": ["type", "session_id", "payload"],
            }
        )
    builder.defs["RunLine"] = {"title": "RunLine", "description": plain(summary), "oneOf": kinds}
    return run


def _messages(builder: _Builder) -> None:
    builder.defs["Request"] = {
        "description": "A request (or, without an `id`, a notification) a client sends; a "
        "member other than jsonrpc, id, method and params is refused.",
        "oneOf": [_request(builder, m) for m in c.METHODS],
    }
    builder.defs["Notification"] = {
        "description": "A notification the gateway sends (never answered).",
        "oneOf": [
            {
                "title": f"{note.name} notification",
                "description": note.summary,
                "type": "object",
                "properties": {
                    "jsonrpc": {"const": "2.0"},
                    "method": {"const": note.name},
                    "params": builder.of(note.params),
                },
                "required": ["jsonrpc", "method", "params"],
            }
            for note in c.NOTIFICATIONS
        ],
    }
    codes = ", ".join(f"{code} {name}" for code, name, _when in c.ERROR_CODES)
    builder.defs["Error"] = {
        "description": "Why a request was refused; a refused request changes nothing.",
        "type": "object",
        "properties": {
            "code": {"type": "integer", "description": codes},
            "message": {"type": "string", "description": "one line"},
        },
        "required": ["code", "message"],
    }
    builder.defs["Response"] = {
        "description": "The answer to a request with an `id`: its `result` (see "
        "`methods.<name>.result`) or an `error`.",
        "type": "object",
        "properties": {
            "jsonrpc": {"const": "2.0"},
            "id": _JSON_ID,
            "result": {},
            "error": _ref("Error"),
        },
        "required": ["jsonrpc", "id"],
        "oneOf": [{"required": ["result"]}, {"required": ["error"]}],
    }
    builder.defs["Message"] = {
        "description": "Any one JSON-RPC message of a session.",
        "anyOf": [_ref("Request"), _ref("Notification"), _ref("Response")],
    }


def schema() -> dict[str, Any]:
    """The JSON Schema of the contract (the document described in the module docstring).

    Raises:
        ValueError: two contract types share a name, or a type is read both strictly (in
            params) and leniently (elsewhere); both are contract bugs.
    """
    strict = {cls for m in c.METHODS for cls in _dataclasses_in(m.params)}
    lenient = {cls for m in c.METHODS for cls in _dataclasses_in(m.result)}
    lenient |= {cls for n in c.NOTIFICATIONS for cls in _dataclasses_in(n.params)}
    lenient |= {cls for p in EVENT_TYPES for cls in _dataclasses_in(p)}
    lenient |= {cls for e in c.RUN_EVENTS for cls in _dataclasses_in(e.payload)}
    both = strict & lenient
    if both:
        names = sorted(cls.__name__ for cls in both)
        raise ValueError(f"read strictly in params and leniently elsewhere: {names}")
    payloads = set(EVENT_TYPES) | {e.payload for e in c.RUN_EVENTS}
    values = {cls for m in c.METHODS for cls in _dataclasses_in(m.result)}
    values |= {cls for n in c.NOTIFICATIONS for cls in _dataclasses_in(n.params)}
    values |= {
        cls
        for p in payloads
        for member in field_types(p).values()
        for cls in _dataclasses_in(member)
    }
    builder = _Builder(strict, payloads & values)
    methods = {
        m.name: {
            "description": m.summary,
            "params": builder.of(m.params),
            "result": builder.of(m.result),
        }
        for m in c.METHODS
    }
    notifications = {n.name: builder.of(n.params) for n in c.NOTIFICATIONS}
    events = {cls.TYPE: _ref(builder.payload(cls)) for cls in EVENT_TYPES}
    builder.of(c.RunAccepted)
    run = _run_lines(builder)
    _messages(builder)
    return {
        "$schema": DIALECT,
        "$id": SCHEMA_ID,
        "title": "The desk gateway protocol",
        "description": f"Protocol version {PROTOCOL_VERSION}. Generated from the contract "
        "(the contract package); see docs/protocol.md for the prose.",
        "anyOf": [
            _ref("Message"),
            {"type": "array", "minItems": 1, "items": _ref("Message")},
        ],
        "methods": methods,
        "notifications": notifications,
        "events": events,
        "run": run,
        "$defs": dict(sorted(builder.defs.items())),
    }


def schema_text() -> str:
    """:func:`schema` as the text of ``docs/protocol.schema.json`` (indented, one final newline)."""
    return json.dumps(schema(), indent=2, ensure_ascii=False) + "\n"
