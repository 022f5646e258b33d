"""The tools offered to the model, by name, and the checking of the arguments it sends.

Models send tool arguments as JSON text, and small local models often get it wrong: invalid
JSON, an array instead of an object, a missing or mistyped field.
:meth:`ToolRegistry.parse_arguments` turns all of these into one :class:`ToolArgumentError` with
a message meant for the model, so the agent can answer the call with an error result (every call
still gets a result) and the model can try again.

The schema check covers the subset of JSON Schema the tools use: ``type`` (object, string,
integer, number, boolean, array, null), ``properties``, ``required``,
``additionalProperties: false``, ``enum``, ``minimum``, ``maximum``, ``exclusiveMinimum``,
``exclusiveMaximum`` and ``items``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from agent.tools.base import Tool, ToolArgumentError, tool_schema
from agent.tools.edits import ApplyPatchTool, EditFileTool
from agent.tools.files import ListDirTool, ReadFileTool, WriteFileTool
from agent.tools.shell_tool import ShellTool
from agent.valid_text import JsonTooDeep, loads

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _type_ok(value: Any, expected: str) -> bool:
    kinds = _TYPES.get(expected)
    if kinds is None:
        return True  # an unknown type name is not ours to refuse
    if isinstance(value, bool) and expected in ("integer", "number"):
        return False  # JSON true is not 1
    if expected == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, kinds)


def check_schema(value: Any, schema: dict[str, Any], where: str = "arguments") -> None:
    """Check ``value`` against the JSON Schema subset named in the module docstring.

    Args:
        value: the parsed JSON value.
        schema: the schema.
        where: the path shown in messages (``arguments.timeout``).

    Raises:
        ToolArgumentError: at the first mismatch, naming the field and what was expected.
    """
    expected = schema.get("type")
    if isinstance(expected, str) and not _type_ok(value, expected):
        raise ToolArgumentError(f"{where} must be {_article(expected)}, not {_json_kind(value)}")
    if isinstance(expected, list) and not any(_type_ok(value, name) for name in expected):
        raise ToolArgumentError(f"{where} must be one of {', '.join(expected)}")
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(json.dumps(choice) for choice in schema["enum"])
        raise ToolArgumentError(f"{where} must be one of {choices}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        _check_bounds(value, schema, where)
    if isinstance(value, dict):
        properties: dict[str, Any] = schema.get("properties", {})
        missing = [name for name in schema.get("required", []) if name not in value]
        if missing:
            raise ToolArgumentError(f"{where} is missing {', '.join(map(repr, missing))}")
        if schema.get("additionalProperties") is False:
            extra = sorted(set(value) - set(properties))
            if extra:
                allowed = ", ".join(map(repr, properties)) or "none"
                raise ToolArgumentError(
                    f"{where} has unknown {', '.join(map(repr, extra))} (allowed: {allowed})"
                )
        for name, sub in properties.items():
            if name in value:
                check_schema(value[name], sub, f"{where}.{name}")
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            check_schema(item, schema["items"], f"{where}[{index}]")


def _check_bounds(value: float, schema: dict[str, Any], where: str) -> None:
    if "minimum" in schema and value < schema["minimum"]:
        raise ToolArgumentError(f"{where} must be >= {schema['minimum']}, not {value}")
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        raise ToolArgumentError(f"{where} must be > {schema['exclusiveMinimum']}, not {value}")
    if "maximum" in schema and value > schema["maximum"]:
        raise ToolArgumentError(f"{where} must be <= {schema['maximum']}, not {value}")
    if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
        raise ToolArgumentError(f"{where} must be < {schema['exclusiveMaximum']}, not {value}")


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _json_kind(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _type_ok(value, name):
            return _article(name) if name != "null" else "null"
    return type(value).__name__


class ToolRegistry:
    """The tools offered in a turn, by name.

    Args:
        tools: the tools; names must be unique.

    Raises:
        ValueError: for two tools with the same name.
    """

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        """Offer one more tool.

        Raises:
            ValueError: when a tool with that name is already registered.
        """
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        """Tool names, in registration order."""
        return list(self._tools)

    def get(self, name: str) -> Tool:
        """The tool called ``name``.

        Raises:
            ToolArgumentError: for an unknown name (the message lists the known ones, for the
                model).
        """
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(self._tools) or "none"
            raise ToolArgumentError(f"there is no tool named {name!r} (tools: {known})", name)
        return tool

    def schemas(self) -> list[dict[str, Any]]:
        """The request's ``tools`` array: ``[{"type": "function", "function": {...}}, ...]``."""
        return [tool_schema(tool) for tool in self._tools.values()]

    def parse_arguments(self, raw_json: str | None, name: str | None = None) -> dict[str, Any]:
        """Parse the JSON arguments text of a tool call.

        Args:
            raw_json: the ``function.arguments`` text as the model sent it; empty or None means
                no arguments (``{}``).
            name: the tool's name; when given, the arguments are also checked against its
                schema (and an unknown name is an error).

        Returns:
            the arguments object.

        Raises:
            ToolArgumentError: for invalid JSON (with line and column), a value that is not a
                JSON object, an unknown tool, or arguments that do not fit the schema.
        """
        text = (raw_json or "").strip()
        if not text:
            args: Any = {}
        else:
            try:
                args = loads(text)
            except json.JSONDecodeError as exc:
                raise ToolArgumentError(
                    f"the arguments are not valid JSON: {exc.msg} at line {exc.lineno} "
                    f"column {exc.colno}",
                    name,
                ) from exc
            except JsonTooDeep as exc:
                raise ToolArgumentError(f"the arguments are not valid JSON: {exc}", name) from exc
        if not isinstance(args, dict):
            raise ToolArgumentError(
                f"the arguments must be a JSON object, not {_json_kind(args)}", name
            )
        if name is not None:
            tool = self.get(name)
            try:
                check_schema(args, tool.parameters)
            except ToolArgumentError as exc:
                raise ToolArgumentError(f"{name}: {exc}", name) from None
        return args


def default_tools(shell: ShellTool | None = None) -> list[Tool]:
    """The standard tools: ``shell`` (``shell`` as given, e.g. sandboxed), ``read_file``,
    ``write_file``, ``edit_file``, ``apply_patch``, ``list_dir``."""
    return [
        shell or ShellTool(),
        ReadFileTool(),
        WriteFileTool(),
        EditFileTool(),
        ApplyPatchTool(),
        ListDirTool(),
    ]


__all__ = ["ToolRegistry", "check_schema", "default_tools"]
