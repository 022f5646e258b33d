"""The tools a model can call, each one stoppable; see :mod:`agent.tools.base` for the contract.

Public API:

* contract: :class:`Tool`, :class:`ToolContext`, :class:`ToolResult`, :func:`tool_schema`,
  :class:`ToolArgumentError`, :func:`stopped_result`;
* tools: :class:`ShellTool` (with :class:`ShellRun`), :class:`ReadFileTool`,
  :class:`WriteFileTool`, :class:`ListDirTool`, :func:`default_tools`;
* running: :class:`ToolRegistry`, :class:`ToolBatch`, :class:`ToolOutcome`;
* processes: :class:`ProcessGroup`, :class:`ProcessLedger`, :class:`GroupEnding`,
  :func:`become_subreaper`;
* output: :class:`OutputBuffer`, :func:`truncate_text`.
"""

from __future__ import annotations

from agent.faces import lazy_names

__all__, __getattr__ = lazy_names(
    __name__,
    {
        "DEFAULT_MAX_OUTPUT_BYTES": "agent.tools.base",
        "GroupEnding": "agent.tools.process",
        "ListDirTool": "agent.tools.files",
        "OutputBuffer": "agent.tools.output",
        "ProcessGroup": "agent.tools.process",
        "ProcessLedger": "agent.tools.process",
        "ReadFileTool": "agent.tools.files",
        "ShellRun": "agent.tools.shell",
        "ShellTool": "agent.tools.shell_tool",
        "Tool": "agent.tools.base",
        "ToolArgumentError": "agent.tools.base",
        "ToolBatch": "agent.tools.runner",
        "ToolContext": "agent.tools.base",
        "ToolOutcome": "agent.tools.runner",
        "ToolRegistry": "agent.tools.registry",
        "ToolResult": "agent.tools.base",
        "WriteFileTool": "agent.tools.files",
        "become_subreaper": "agent.tools.process",
        "default_tools": "agent.tools.registry",
        "stopped_result": "agent.tools.base",
        "tool_schema": "agent.tools.base",
        "truncate_text": "agent.tools.output",
    },
)
