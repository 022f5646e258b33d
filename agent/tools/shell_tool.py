"""The ``shell`` tool's definition: what the model is told, its arguments, and one
:class:`~agent.tools.shell.ShellRun` per call (how a command runs and ends is there)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.tools.base import ToolContext, ToolResult
from agent.tools.sandbox import Sandbox
from agent.tools.shell import ShellRun
from agent.tools.spares import SparePool


@dataclass(frozen=True, slots=True)
class ShellTool:
    """Runs a shell command; needs approval. Arguments: ``command``, optional ``timeout`` (s).

    Attributes:
        default_timeout_s: timeout when the model gives none, in seconds.
        max_timeout_s: the largest timeout the model may ask for, in seconds.
        grace_s: seconds between SIGTERM and SIGKILL when a command is ended.
        env: extra environment variables for every command.
        sandbox: how commands are confined (:mod:`agent.tools.sandbox`; off by default).
        spares: keepers started ahead of need (:mod:`agent.tools.spares`), or None; whoever
            made the pool closes it.
    """

    default_timeout_s: float = 600.0
    max_timeout_s: float = 3_600.0
    grace_s: float = 2.0
    env: Mapping[str, str] = field(default_factory=dict)
    sandbox: Sandbox = field(default_factory=Sandbox)
    spares: SparePool | None = None
    name: str = "shell"
    needs_approval: bool = True

    @property
    def approval_note(self) -> str:
        """What the approval card says of every call: the sandbox it runs in."""
        return self.sandbox.describe()

    @property
    def description(self) -> str:
        """What the model reads about the tool."""
        return (
            "Run a command with /bin/sh in the working directory and return its combined "
            "stdout and stderr (long output keeps its head and tail) and exit code. stdin is "
            "empty. Background processes still running when the command exits are ended. "
            f"The command is ended after `timeout` seconds (default {self.default_timeout_s:g})."
        )

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON schema of the arguments."""
        return {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line to run."},
                "timeout": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "maximum": self.max_timeout_s,
                    "description": "Seconds before the command is ended.",
                },
            },
            "required": ["command"],
            "additionalProperties": False,
        }

    def changed_paths(self, args: dict[str, Any], cwd: Path) -> None:
        """Any file of the workspace (see :class:`agent.tools.changes.ChangesFiles`)."""
        return None

    def start(self, args: Mapping[str, Any], ctx: ToolContext) -> ShellRun:
        """The :class:`ShellRun` for one call (not started); ``run`` uses it.

        Args:
            args: ``{"command": str, "timeout"?: seconds}``.
            ctx: the call's context.
        """
        timeout = args.get("timeout")
        return ShellRun(
            str(args["command"]),
            cwd=ctx.cwd,
            on_output=ctx.on_output,
            max_output_bytes=ctx.max_output_bytes,
            timeout_s=float(timeout) if timeout is not None else self.default_timeout_s,
            grace_s=self.grace_s,
            ledger=ctx.ledger,
            env=self.env,
            sandbox=self.sandbox,
            spares=self.spares,
            stops=ctx.stops,
        )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Run the command; see :mod:`agent.tools.shell` for how it ends.

        Raises:
            asyncio.CancelledError: on a hard stop, once the whole process group is gone.
        """
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            return ToolResult.error("shell: `command` must be a non-empty string")
        return await self.start(args, ctx).run()


__all__ = ["ShellTool"]
