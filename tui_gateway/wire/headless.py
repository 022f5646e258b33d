"""``desk run "prompt"``: one turn without a screen, its reply streamed to stdout.

Stops keep their attribution without a desk: Ctrl+C (SIGINT) is the person's stop
(``StopRequest.by_user(Surface.HEADLESS_SIGINT, "interrupted with Ctrl+C")``), SIGTERM and SIGHUP
the system's (``gateway.shutdown``, through the gateway's own shutdown). The exit status says how
the turn ended: 0 completed, 130 stopped by the user, 143 stopped by the system, 1 failed (one
line on stderr). A second Ctrl+C while the first stop is under way exits at once (130).

Tool calls that need approval are denied (a line on stderr says so) unless ``approve`` is set.
The turn is submitted once every MCP server has started or failed (bounded by their
``startup_timeout_s``), so that it is offered their tools; a server that fails says so on stderr
(``mcp: NAME failed: ...``).

On a terminal the reply is printed with its control characters made visible
(:func:`agent.terminal_text.terminal_safe`): a reply must not clear the screen or retitle the
window. Piped into a file or another program it is printed exactly as the model sent it. The
lines on stderr are always made safe (they quote the server and the model).

With ``json`` the run writes one JSON object a line instead of the reply
(:mod:`tui_gateway.wire.run_lines`, :mod:`contract.run`), ending with exactly
one ``turn.completed`` whatever ends it; the exit status and the lines on stderr are the same.
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
from contract.envelope import StopReceipt
from contract.errors import GatewayError
from contract.events import ApprovalRequest, GatewayEvent, MessageComplete, MessageDelta
from contract.mcp_events import McpServerChanged
from contract.run import SessionStarted
from tui_gateway.gateway import Gateway
from tui_gateway.turns.approvals import refused
from tui_gateway.wire import run_early
from tui_gateway.wire.run_lines import RunLines

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


def refusal_lines(tool: str, note: str) -> list[str]:
    """What ``desk run`` without ``--yes`` prints on stderr for a call that asks first: that it
    was not allowed and why (the flag), then, on its own line, what the approval prompt shows
    with the call (``note``: the shell's sandbox, a path outside the workspace), if anything.

    Args:
        tool: the tool's name (``shell``).
        note: the approval request's ``reason``; "" for none.
    """
    lines = [
        f"desk: the {tool} call was not allowed: --yes was not given (--yes allows tool calls)"
    ]
    if note:
        lines.append(f"desk:   shown with the call: {note}")
    return lines


class _Turn:
    """Prints one session's reply as it streams and notes its outcome."""

    def __init__(
        self, gateway: Gateway, out: TextIO, err: TextIO, approve: bool, lines: RunLines | None
    ) -> None:
        self.gateway = gateway
        self.out = out
        self.err = err
        self.approve = approve
        self.lines = lines
        self.safe = _is_terminal(out)
        self.session_id = ""
        self.printed = ""
        self.complete: MessageComplete | None = None
        self.done = threading.Event()
        self.user_stop: StopRequest | None = None
        self.shutting = threading.Event()
        self.system_stop: StopRequest | None = None  # SIGTERM/SIGHUP: set before ``shutting``

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
        if self.lines is not None:
            self.lines.event(event)
        if isinstance(payload, MessageDelta) and payload.text:
            self._write(payload.text)
        elif isinstance(payload, ApprovalRequest):
            decision = "once" if self.approve else "deny"
            if not self.approve:
                for line in refusal_lines(payload.tool, payload.reason):
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

    def started(self, resumed: bool, title: str) -> None:
        """The session exists: its ``session.started`` line (with ``json``)."""
        if self.lines is None:
            return
        provider = self.gateway.provider_for(self.session_id)
        started = SessionStarted(provider.model, provider.base_url, resumed, title)
        self.lines.started(self.session_id, started)

    def _write(self, text: str) -> None:
        if self.lines is not None:  # the lines carry the reply
            return
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
    json: bool = False,
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
        json: write the run's events as JSON lines instead of the reply
            (:mod:`contract.run`).
        out: where the reply goes (stdout).
        err: where problems go, one line each (stderr).

    Returns:
        the exit status (see the module docstring).
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    lines = RunLines(out) if json else None
    turn = _Turn(gateway, out, err, approve, lines)
    sub = gateway.subscribe(turn.on_event)
    restore = _install_signals(gateway, turn)
    refused: str | None = None
    left = False
    try:
        try:
            if session_id is not None:
                resumed = gateway.session_resume(session_id)
                turn.session_id = resumed.session_id
                turn.started(True, resumed.title)
            else:
                turn.session_id = gateway.session_create()
                turn.started(False, "")
            gateway.mcp.wait_started()  # the turn is offered the tools of the servers ready now
            gateway.prompt_submit(turn.session_id, prompt)
            turn.apply_user_stop()  # a Ctrl+C that came before the turn existed
        except GatewayError as exc:
            refused = exc.message
        else:
            turn.done.wait()
    except KeyboardInterrupt:  # the second Ctrl+C: leave now
        left = True
    finally:
        restore()
        report = gateway.shutdown()
        gateway.unsubscribe(sub)
        for path in report.unsaved:  # the database stayed unavailable: nothing is lost
            _say(f"desk: what could not be saved is in {path}", err)
    complete = turn.complete or _ended_before(turn, refused)
    turn.done.set()  # decided: a SIGTERM's waiter has nothing to wait for (the exit joins it)
    if lines is not None:
        lines.close(turn.session_id, complete)
    if refused is not None:
        _say(f"desk: {refused}", err)
        return EXIT_SYSTEM_STOP if turn.shutting.is_set() else EXIT_FAILED
    if left:
        return EXIT_USER_STOP
    code = exit_code(complete)
    if complete.cut_at_length:
        _say(f"desk: {complete.length_notice()}", err)
    if code == EXIT_FAILED:
        line = " ".join((complete.error or complete.exit_reason).split())
        _say(f"desk: {line}", err)
    elif code != EXIT_COMPLETED and complete.stop is not None:
        _say(f"desk: {complete.exit_reason}: {complete.stop.reason}", err)
    return code


def _ended_before(turn: _Turn, refused: str | None) -> MessageComplete:
    """The outcome of a run whose turn never showed its own: refused before it started (by
    the gateway, or by its shutdown), or left by a second Ctrl+C."""
    if refused is not None and turn.shutting.is_set():
        return _stopped_by_system(turn)
    if refused is not None:
        error = " ".join(refused.split())
        reason = ExitReason.failed("GatewayError")
        return MessageComplete("", TurnStatus.FAILED, reason, "", error=error)
    stop = turn.user_stop or StopRequest.by_user(Surface.HEADLESS_SIGINT, "interrupted with Ctrl+C")
    return MessageComplete("", TurnStatus.INTERRUPTED, stop.exit_reason(), "")


def _stopped_by_system(turn: _Turn) -> MessageComplete:
    """The outcome of a run the system stopped (SIGTERM, SIGHUP) before its turn existed."""
    stop = turn.system_stop or StopRequest.by_system(Surface.GATEWAY_SHUTDOWN, "desk was ended")
    receipt = StopReceipt(stop.issuer.value, stop.surface.value, stop.reason, None, None)
    return MessageComplete("", TurnStatus.INTERRUPTED, stop.exit_reason(), "", stop=receipt)


def _is_terminal(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream: be safe
        return True


def _say(line: str, err: TextIO) -> None:
    """One line on stderr, made safe to show (it may quote the server or the model)."""
    print(terminal_safe(line), file=err, flush=True)


def _install_signals(gateway: Gateway, turn: _Turn) -> Callable[[], None]:
    """Ctrl+C -> a user stop; SIGTERM, SIGHUP -> the gateway's shutdown (a system stop)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def on_int(_sig: int, _frame: FrameType | None) -> None:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl+C leaves
        turn.user_stop = StopRequest.by_user(Surface.HEADLESS_SIGINT, "interrupted with Ctrl+C")
        # Not here: the main thread may hold a gateway lock this handler interrupted.
        threading.Thread(target=turn.apply_user_stop, name="desk-run-stop", daemon=True).start()

    def on_term(sig: int, _frame: FrameType | None) -> None:
        if turn.shutting.is_set():
            return
        name = signal.Signals(sig).name
        reason = f"stopped by {name} before the turn started"
        turn.system_stop = StopRequest.by_system(Surface.GATEWAY_SHUTDOWN, reason)
        turn.shutting.set()
        threading.Thread(target=_shutdown_and_wake, args=(gateway, turn), daemon=True).start()

    previous_int = signal.signal(signal.SIGINT, on_int)
    previous = [(sig, signal.signal(sig, on_term)) for sig in run_early.SYSTEM_SIGNALS]
    lost = run_early.take_over()  # from here this run writes its own end
    if lost is not None:  # came while it started, and its raise was lost: a stop all the same
        (on_int if lost == signal.SIGINT else on_term)(lost, None)

    def restore() -> None:
        signal.signal(signal.SIGINT, previous_int)
        for sig, handler in previous:
            signal.signal(sig, handler)

    return restore


DELIVERY_WAIT_S = 5.0
"""After the shutdown, how long a running turn's own outcome may take to reach the run."""


def _shutdown_and_wake(gateway: Gateway, turn: _Turn) -> None:
    gateway.shutdown()
    # The turn's own outcome (with its receipt) was published before the shutdown returned;
    # its delivery is on another thread.
    turn.done.wait(DELIVERY_WAIT_S)
    if not turn.done.is_set():  # no turn was running: the system stopped it all the same
        turn.complete = _stopped_by_system(turn)
        turn.done.set()
