"""Type checkers read this; at run time the face imports each name on first use."""

from __future__ import annotations

from agent.tools.base import (
    DEFAULT_MAX_OUTPUT_BYTES,
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolResult,
    stopped_result,
    tool_schema,
)
from agent.tools.files import (
    ListDirTool,
    ReadFileTool,
    WriteFileTool,
)
from agent.tools.output import (
    OutputBuffer,
    truncate_text,
)
from agent.tools.process import (
    GroupEnding,
    ProcessGroup,
    ProcessLedger,
    become_subreaper,
)
from agent.tools.registry import (
    ToolRegistry,
    default_tools,
)
from agent.tools.runner import (
    ToolBatch,
    ToolOutcome,
)
from agent.tools.shell import (
    ShellRun,
)
from agent.tools.shell_tool import (
    ShellTool,
)

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "GroupEnding",
    "ListDirTool",
    "OutputBuffer",
    "ProcessGroup",
    "ProcessLedger",
    "ReadFileTool",
    "ShellRun",
    "ShellTool",
    "Tool",
    "ToolArgumentError",
    "ToolBatch",
    "ToolContext",
    "ToolOutcome",
    "ToolRegistry",
    "ToolResult",
    "WriteFileTool",
    "become_subreaper",
    "default_tools",
    "stopped_result",
    "tool_schema",
    "truncate_text",
]
