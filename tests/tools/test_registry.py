"""ToolRegistry: schemas for the request, lookup, and arguments the model may get wrong."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent.tools import (
    ListDirTool,
    ReadFileTool,
    ShellTool,
    ToolArgumentError,
    ToolRegistry,
    WriteFileTool,
    default_tools,
)


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry(default_tools())


def test_schemas_are_in_the_openai_tool_format(registry: ToolRegistry) -> None:
    schemas = registry.schemas()
    assert [s["function"]["name"] for s in schemas] == [
        "shell",
        "read_file",
        "write_file",
        "edit_file",
        "apply_patch",
        "list_dir",
    ]
    for schema in schemas:
        assert schema["type"] == "function"
        assert set(schema["function"]) == {"name", "description", "parameters"}
        assert schema["function"]["parameters"]["type"] == "object"
        json.dumps(schema)  # must be JSON as it is sent


def test_approval_is_needed_for_tools_that_change_things() -> None:
    assert ShellTool().needs_approval and WriteFileTool().needs_approval
    assert not ReadFileTool().needs_approval and not ListDirTool().needs_approval


def test_get_finds_tools_and_names_the_known_ones_otherwise(registry: ToolRegistry) -> None:
    assert registry.get("shell").name == "shell"
    with pytest.raises(ToolArgumentError, match=r"no tool named 'rm_rf' \(tools: shell, read_file"):
        registry.get("rm_rf")


def test_two_tools_with_one_name_are_refused() -> None:
    with pytest.raises(ValueError, match="already registered"):
        ToolRegistry([ShellTool(), ShellTool()])


def test_valid_arguments_are_parsed(registry: ToolRegistry) -> None:
    args = registry.parse_arguments('{"command": "ls", "timeout": 5}', "shell")
    assert args == {"command": "ls", "timeout": 5}
    assert registry.parse_arguments('{"path": "x", "offset": 3.0}', "read_file")["offset"] == 3.0


@pytest.mark.parametrize("raw", ["", "   ", None])
def test_empty_arguments_mean_no_arguments(registry: ToolRegistry, raw: str | None) -> None:
    assert registry.parse_arguments(raw) == {}
    assert registry.parse_arguments(raw, "list_dir") == {}


@pytest.mark.parametrize(
    ("raw", "name", "message"),
    [
        ('{"command": "ls"', None, r"not valid JSON: Expecting ',' delimiter at line 1 column 17"),
        ("{'command': 'ls'}", None, "not valid JSON: Expecting property name"),
        ('["ls"]', None, "must be a JSON object, not an array"),
        ('"ls"', None, "must be a JSON object, not a string"),
        ("null", None, "must be a JSON object, not null"),
        ("{}", "shell", "shell: arguments is missing 'command'"),
        ('{"command": 5}', "shell", "arguments.command must be a string, not an integer"),
        ('{"command": "ls", "timeout": "5"}', "shell", "timeout must be a number, not a string"),
        ('{"command": "ls", "timeout": true}', "shell", "timeout must be a number, not a boolean"),
        ('{"command": "ls", "timeout": 0}', "shell", "timeout must be > 0, not 0"),
        ('{"command": "ls", "timeout": 1e9}', "shell", "timeout must be <= 3600.0"),
        ('{"command": "ls", "cwd": "/"}', "shell", "unknown 'cwd' (allowed: 'command', 'timeout')"),
        ('{"path": "x", "offset": 1.5}', "read_file", "offset must be an integer, not a number"),
        ('{"path": "x", "offset": -1}', "read_file", "offset must be >= 0, not -1"),
        ("{}", "nope", "no tool named 'nope'"),
    ],
)
def test_broken_arguments_raise_one_clear_error(
    registry: ToolRegistry, raw: str, name: str | None, message: str
) -> None:
    with pytest.raises(ToolArgumentError) as caught:
        registry.parse_arguments(raw, name)
    assert message in str(caught.value) or __import__("re").search(message, str(caught.value))
    assert caught.value.tool == name


def test_schema_subset_covers_enum_arrays_and_union_types() -> None:
    from agent.tools.registry import check_schema

    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "mode": {"enum": ["a", "b"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "limit": {"type": ["integer", "null"], "exclusiveMaximum": 10},
        },
    }
    check_schema({"mode": "a", "tags": ["x"], "limit": None}, schema)
    for bad, message in [
        ({"mode": "c"}, 'arguments.mode must be one of "a", "b"'),
        ({"tags": ["x", 3]}, "arguments.tags[1] must be a string, not an integer"),
        ({"limit": "3"}, "arguments.limit must be one of integer, null"),
        ({"limit": 10}, "arguments.limit must be < 10, not 10"),
    ]:
        with pytest.raises(
            ToolArgumentError, match=message.replace("[", r"\[").replace("]", r"\]")
        ):
            check_schema(bad, schema)
