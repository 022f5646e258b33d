"""Params and results of the ``console.*`` methods: list, run and cancel console commands."""

from __future__ import annotations

from dataclasses import dataclass

from contract.results import ConsoleCommandInfo
from tui_gateway.wire.contract.stop import StopParams


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
