"""The ``console.*`` methods (list, run and cancel console commands): their params, results
and declarations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract.methods.declare import Method
from contract.methods.stop import StopParams
from contract.results import ConsoleCommandInfo


@dataclass(frozen=True, slots=True)
class ConsoleCommandsParams:
    """Params of ``console.commands`` (none)."""


@dataclass(frozen=True, slots=True)
class ConsoleCommandsResult:
    """Result of ``console.commands``.

    Attributes:
        commands: every command ``console.run`` takes, by name.
    """

    commands: list[ConsoleCommandInfo]


@dataclass(frozen=True, slots=True)
class ConsoleRunParams:
    """Params of ``console.run``.

    Attributes:
        session_id: the session the command line is typed in.
        line: the command line (``console.commands`` lists the commands).
    """

    session_id: str
    line: str


@dataclass(frozen=True, slots=True)
class ConsoleRunResult:
    """Result of ``console.run``.

    Attributes:
        command_id: the command's id; its output and outcome arrive as events.
    """

    command_id: str


@dataclass(frozen=True, slots=True)
class ConsoleCancelParams:
    """Params of ``console.cancel``: the command to cancel, and the stop.

    Attributes:
        command_id: the command.
        stop: who cancels it, from where (a person's surface is ``console.cancel``), and why.
    """

    command_id: str
    stop: StopParams


@dataclass(frozen=True, slots=True)
class ConsoleCancelResult:
    """Result of ``console.cancel``.

    Attributes:
        cancelled: false when the command had already finished.
    """

    cancelled: bool


# -- the methods: name, params, result, what it does, and the call into the gateway --

CONSOLE_COMMANDS = Method(
    "console.commands",
    ConsoleCommandsParams,
    ConsoleCommandsResult,
    "The commands this gateway's console runs, by name, with their usage and a summary "
    "(what a frontend offers for completion and help).",
    lambda g, p: ConsoleCommandsResult(commands=g.console_commands()),
)

CONSOLE_RUN = Method(
    "console.run",
    ConsoleRunParams,
    ConsoleRunResult,
    "Run a console command line on a console worker; output arrives as `console.output` "
    "events and the outcome as one `console.complete`.",
    lambda g, p: ConsoleRunResult(command_id=g.console_run(p.session_id, p.line)),
)

CONSOLE_CANCEL = Method(
    "console.cancel",
    ConsoleCancelParams,
    ConsoleCancelResult,
    "Drop a queued command, or hard-stop a running one, booked to the `stop`'s issuer.",
    lambda g, p: ConsoleCancelResult(cancelled=g.console_cancel(p.command_id, p.stop.request())),
)

METHODS: tuple[Method[Any, Any], ...] = (
    CONSOLE_COMMANDS,
    CONSOLE_RUN,
    CONSOLE_CANCEL,
)
"""This group's methods, in the order the reference lists them."""
