"""``python -m tui_gateway.wire {gateway,serve,run,schedule} ...``: the wire commands, without
desk."""

from __future__ import annotations

import sys

from tui_gateway.wire import run_early

if __name__ == "__main__" and sys.argv[1:2] == ["run"]:  # before the heavy imports: a SIGTERM
    run_early.hold()  # from here on is a stop said as one (main_run's arm raises it)

from collections.abc import Sequence  # noqa: E402

from tui_gateway.stops.process_exit import exit_process  # noqa: E402
from tui_gateway.wire.cli import main_gateway_stdio, main_run, main_serve  # noqa: E402
from tui_gateway.wire.schedule_cli import main_schedule  # noqa: E402

USAGE = """usage: python -m tui_gateway.wire COMMAND [ARGS...]

commands:
  gateway --stdio   serve the gateway as JSON-RPC 2.0 on stdin/stdout
  serve             serve the gateway over HTTP with server-sent events
  run PROMPT        run one turn headless and print the reply
  schedule list     the schedules of config.toml, their next and last runs
  schedule run NAME run one firing of a schedule now
"""


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch to the subcommand; returns its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    commands = {
        "gateway": main_gateway_stdio,
        "serve": main_serve,
        "run": main_run,
        "schedule": main_schedule,
    }
    if not args or args[0] not in commands:
        sys.stderr.write(USAGE)
        return 0 if args and args[0] in ("-h", "--help") else 2
    return commands[args[0]](args[1:])


if __name__ == "__main__":
    code = main()
    if sys.argv[1:2] == ["run"]:  # its end is written: a late SIGTERM cannot kill the exit
        run_early.ignore_from_now()
    exit_process(code)  # no thread runs while the interpreter finalizes
