"""``desk run "prompt"``: one turn without a screen, its reply streamed to stdout.

Stops keep their attribution without a desk: Ctrl+C (SIGINT) is the person's stop
(``StopRequest.by_user(Surface.HEADLESS_SIGINT, "interrupted with Ctrl+C")``), SIGTERM the system's
(``gateway.shutdown``, through the gateway's own shutdown). The exit status says how the turn
ended: 0 completed, 130 stopped by the user, 143 stopped by the system, 1 failed (one line on
stderr). A second Ctrl+C while the first stop is under way exits at once (130).

Tool calls that need approval are denied (a line on stderr says so) unless ``approve`` is set.
The turn is submitted once every MCP server has started or failed (bounded by their
``startup_timeout_s``), so that it is offered their tools; a server that fails says so on stderr
(``mcp: NAME failed: ...``).

On a terminal the reply is printed with its control characters made visible
(:func:`agent.terminal_text.terminal_safe`): a reply must not clear the screen or retitle the
window. Piped into a file or another program it is printed exactly as the model sent it. The
lines on stderr are always made safe (they quote the server and the model).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import TextIO

from agent.outcome import ExitReason, TurnStatus
from agent.stops import StopRequest, Surface
from agent.terminal_text import terminal_safe
from tui_gateway.approvals import refused
from tui_gateway.events import ApprovalRequest, GatewayEvent, MessageComplete, MessageDelta
from tui_gateway.gateway import Gateway
from tui_gateway.mcp_events import McpServerChanged
from tui_gateway.types import GatewayError

EXIT_COMPLETED = 0
EXIT_FAILED = 1
EXIT_USER_STOP = 130
EXIT_SYSTEM_STOP = 143


def exit_code(complete: MessageComplete) -> int:
    """The process exit status for a turn's outcome."""
    if complete.status == "completed":
        return EXIT_COMPLETED
    if complete.exit_reason == "interrupted_by_user":
        return EXIT_USER_STOP
    if complete.exit_reason.startswith("interrupted_by_system"):
        return EXIT_SYSTEM_STOP
    return EXIT_FAILED


class _Turn:
    """Prints one session's reply as it streams and notes its outcome."""

    def __init__(self, gateway: Gateway, out: TextIO, err: TextIO, approve: bool) -> None:
        self.gateway = gateway
        self.out = out
        self.err = err
        self.approve = approve
        self.safe = _is_terminal(out)
        self.session_id = ""
        self.printed = ""
        self.complete: MessageComplete | None = None
        self.done = threading.Event()
        self.user_stop: StopRequest | None = None
        self.shutting = threading.Event()

    def apply_user_stop(self) -> None:
        """Send the Ctrl+C stop, if there was one, to the session's running turn."""
        if self.user_stop is not None and self.session_id:
            self.gateway.session_interrupt(self.session_id, self.user_stop)

    def on_event(self, event: GatewayEvent) -> None:
        payload = event.payload
        if isinstance(payload, McpServerChanged) and payload.message:
            _say(payload.line, self.err)
            return
        if event.session_id != self.session_id or self.done.is_set():
            return
        if isinstance(payload, MessageDelta) and payload.text:
            self._write(payload.text)
        elif isinstance(payload, ApprovalRequest):
            decision = "once" if self.approve else "deny"
            if not self.approve:
                why = f": {payload.reason}" if payload.reason else ""
                line = f"desk: denied the {payload.tool} call{why} (pass --yes to allow tools)"
                _say(line, self.err)
            refusal = "" if self.approve else refused(payload.tool, "desk run without --yes")
            self.gateway.approval_respond(
                event.session_id, payload.request_id, decision, refusal=refusal
            )
        elif isinstance(payload, MessageComplete):
            text = payload.text
            if text.startswith(self.printed) and len(text) > len(self.printed):
                self._write(text[len(self.printed) :])
            if self.printed and not self.printed.endswith("\n"):
                self._write("\n")
            self.complete = payload
            self.done.set()

    def _write(self, text: str) -> None:
        self.printed += text  # what the model said: compared with the canonical text
        try:
            self.out.write(terminal_safe(text) if self.safe else text)
            self.out.flush()
        except (OSError, ValueError):  # stdout closed (e.g. piped into head): keep going
            pass


def run_turn(
    gateway: Gateway,
    prompt: str,
    *,
    session_id: str | None = None,
    approve: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Run ``prompt`` as one turn, print the reply, shut the gateway down.

    Args:
        gateway: the gateway (shut down before returning).
        prompt: the prompt.
        session_id: a saved session to continue (needs the gateway's store), or None for a
            new one.
        approve: allow tool calls that need approval (else they are denied).
        out: where the reply goes (stdout).
        err: where problems go, one line each (stderr).

    Returns:
        the exit status (see the module docstring).
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    turn = _Turn(gateway, out, err, approve)
    sub = gateway.subscribe(turn.on_event)
    restore = _install_signals(gateway, turn)
    try:
        try:
            if session_id is not None:
                turn.session_id = gateway.session_resume(session_id).session_id
            else:
                turn.session_id = gateway.session_create()
            gateway.mcp.wait_started()  # the turn is offered the tools of the servers ready now
            gateway.prompt_submit(turn.session_id, prompt)
            turn.apply_user_stop()  # a Ctrl+C that came before the turn existed
        except GatewayError as exc:
            _say(f"desk: {exc.message}", err)
            return EXIT_SYSTEM_STOP if turn.shutting.is_set() else EXIT_FAILED
        turn.done.wait()
    except KeyboardInterrupt:  # the second Ctrl+C: leave now
        return EXIT_USER_STOP
    finally:
        restore()
        report = gateway.shutdown()
        gateway.unsubscribe(sub)
        for path in report.unsaved:  # the database stayed unavailable: nothing is lost
            _say(f"desk: what could not be saved is in {path}", err)
    complete = turn.complete
    assert complete is not None
    code = exit_code(complete)
    if code == EXIT_FAILED:
        line = " ".join((complete.error or complete.exit_reason).split())
        _say(f"desk: {line}", err)
    elif code != EXIT_COMPLETED and complete.stop is not None:
        _say(f"desk: {complete.exit_reason}: {complete.stop.reason}", err)
    return code


def _is_terminal(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream: be safe
        return True


def _say(line: str, err: TextIO) -> None:
    """One line on stderr, made safe to show (it may quote the server or the model)."""
    print(terminal_safe(line), file=err, flush=True)


def _install_signals(gateway: Gateway, turn: _Turn) -> Callable[[], None]:
    """Ctrl+C -> a user stop; SIGTERM -> the gateway's shutdown (a system stop)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def on_int(_sig: int, _frame: FrameType | None) -> None:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl+C leaves
        turn.user_stop = StopRequest.by_user(Surface.HEADLESS_SIGINT, "interrupted with Ctrl+C")
        # Not here: the main thread may hold a gateway lock this handler interrupted.
        threading.Thread(target=turn.apply_user_stop, name="desk-run-stop", daemon=True).start()

    def on_term(_sig: int, _frame: FrameType | None) -> None:
        if turn.shutting.is_set():
            return
        turn.shutting.set()
        threading.Thread(target=_shutdown_and_wake, args=(gateway, turn), daemon=True).start()

    previous_int = signal.signal(signal.SIGINT, on_int)
    previous_term = signal.signal(signal.SIGTERM, on_term)

    def restore() -> None:
        signal.signal(signal.SIGINT, previous_int)
        signal.signal(signal.SIGTERM, previous_term)

    return restore


def _shutdown_and_wake(gateway: Gateway, turn: _Turn) -> None:
    gateway.shutdown()
    if not turn.done.is_set():  # no turn was running: the system stopped it all the same
        turn.complete = MessageComplete(
            turn_id="",
            status=TurnStatus.INTERRUPTED,
            exit_reason=ExitReason.interrupted_by_system(Surface.GATEWAY_SHUTDOWN.value),
            text="",
        )
        turn.done.set()
