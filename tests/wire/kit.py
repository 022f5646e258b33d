"""Helpers for the wire tests: child processes whose output is waited on with deadlines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from agent.outcome import ExitReason
from agent.provider.client import ProviderConfig
from agent.stops import Issuer, Surface
from contract.events import EVENT_TYPES, ChildCompleted, MessageComplete, Payload, StopReceipt
from demo_model.server import DemoModelServer
from tui_gateway.wire.codec import field_types

ROOT = Path(__file__).resolve().parents[2]


SETTINGS_VARIABLES = (
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "DESK_MODEL",
    "DESK_DB",
    "DESK_CONTEXT_WINDOW",
    "DESK_WORKSPACE",
)
"""The environment variables of the settings; none leaks from the test run into a child."""


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This environment, with the repository importable and no settings leaking in.

    Args:
        extra: variables to set on top (e.g. ``DESK_MODEL``, ``XDG_CONFIG_HOME``).
    """
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARIABLES}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


def wire_cmd(command: str, provider: ProviderConfig, *extra: str) -> list[str]:
    """``python -m tui_gateway.wire COMMAND`` against ``provider``."""
    return [
        sys.executable,
        "-m",
        "tui_gateway.wire",
        command,
        "--base-url",
        provider.base_url,
        "--model",
        provider.model,
        *extra,
    ]


def gateway_cmd(provider: ProviderConfig, *extra: str) -> list[str]:
    """``python -m tui_gateway.wire gateway --stdio`` against ``provider``."""
    return wire_cmd("gateway", provider, "--stdio", *extra)


DEADLINE_S = 30.0
"""How long a wait on a child may take by default: a deadline for a stuck child, never a speed
test (a loaded machine takes seconds to start Python and import the gateway)."""


class Collected:
    """Everything a child wrote on one pipe, collected by a thread; wait on it with deadlines."""

    def __init__(self, pipe: Any) -> None:
        self.data = b""
        self.closed = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe: Any) -> None:
        while True:
            chunk = pipe.read1(65536) if hasattr(pipe, "read1") else pipe.read(65536)
            with self._cond:
                if not chunk:
                    pipe.close()
                    self.closed = True
                    self._cond.notify_all()
                    return
                self.data += chunk
                self._cond.notify_all()

    def wait_for(self, predicate: Callable[[bytes], bool], timeout: float = DEADLINE_S) -> bool:
        """Block until ``predicate(data)`` holds or ``timeout`` seconds pass."""
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self.data), timeout)

    def wait_closed(self, timeout: float = DEADLINE_S) -> bytes:
        """Wait for the end of the pipe; returns all the data."""
        with self._cond:
            assert self._cond.wait_for(lambda: self.closed, timeout), "the pipe stayed open"
            return self.data

    @property
    def text(self) -> str:
        with self._cond:
            return self.data.decode("utf-8", errors="replace")


class Child:
    """A child process with its stdout and stderr collected."""

    def __init__(
        self, argv: Sequence[str], *, stdin: bool = False, env: Mapping[str, str] | None = None
    ) -> None:
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env(env),
            cwd=ROOT,
        )
        self.out = Collected(self.proc.stdout)
        self.err = Collected(self.proc.stderr)

    def wait(self, timeout: float = 2 * DEADLINE_S) -> int:
        """Wait for the child's exit; returns its code (TimeoutExpired after ``timeout`` s)."""
        return self.proc.wait(timeout)

    def kill(self) -> None:
        """End the child (if it still runs) and close every pipe."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        self.out.wait_closed()
        self.err.wait_closed()


class RawStdio:
    """A stdio gateway driven with raw lines, for the protocol's edge cases."""

    def __init__(self, argv: Sequence[str]) -> None:
        self.child = Child(argv, stdin=True)
        self._next = 1000
        assert self.wait_message(lambda m: m.get("method") == "gateway.ready", 20.0)

    def messages(self) -> list[dict[str, Any]]:
        """Every JSON line the gateway wrote so far."""
        lines = self.child.out.data.splitlines()
        return [m for m in (json.loads(x) for x in lines if x.strip()) if isinstance(m, dict)]

    def wait_message(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = DEADLINE_S
    ) -> dict[str, Any] | None:
        found: list[dict[str, Any]] = []

        def check(data: bytes) -> bool:
            for line in data.splitlines():
                if line.strip():
                    message = json.loads(line)
                    if predicate(message):
                        found.append(message)
                        return True
            return False

        return found[0] if self.child.out.wait_for(check, timeout) else None

    def send_raw(self, data: bytes) -> None:
        stdin = self.child.proc.stdin
        assert stdin is not None
        stdin.write(data)
        stdin.flush()

    def send(self, message: Any) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def call(self, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request with a fresh id; returns its response (result or error)."""
        self._next += 1
        request_id = self._next
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        response = self.wait_message(
            lambda m: isinstance(m, dict) and m.get("id") == request_id and "method" not in m
        )
        assert response is not None, f"no response to {method}"
        return response

    def close(self) -> int:
        stdin = self.child.proc.stdin
        assert stdin is not None
        stdin.close()
        code = self.child.wait()
        self.child.kill()
        return code


def slow_reply(server: DemoModelServer, tokens_per_second: float = 40.0) -> None:
    """Make the demo model slow enough that a turn is still streaming when the test stops it."""
    server.configure(tokens_per_second=tokens_per_second)


def payloads() -> st.SearchStrategy[Payload]:
    """Any event payload, with any members (a stopped turn's receipt included)."""
    text = st.text(max_size=20)
    receipts = st.builds(
        StopReceipt,
        issuer=st.sampled_from([i.value for i in Issuer]),
        surface=st.sampled_from([s.value for s in Surface]),
        reason=text,
        closed_ms=st.none() | st.floats(0, 1e6),
        exited_ms=st.none() | st.floats(0, 1e6),
    )
    exit_reasons = st.one_of(
        st.sampled_from([ExitReason.completed(), ExitReason.interrupted_by_user()]),
        st.sampled_from([ExitReason.interrupted_by_system(s.value) for s in Surface]),
        st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True).map(ExitReason.failed),
        st.integers(0, 10**6).map(ExitReason.max_iterations),
    )
    outcomes = (MessageComplete, ChildCompleted)
    others = [st.builds(cls, **_finite_floats(cls)) for cls in EVENT_TYPES if cls not in outcomes]
    ended = [
        st.builds(
            cls,
            exit_reason=exit_reasons,
            stop=st.none() | receipts,
            undelivered=st.lists(text, max_size=3).map(tuple),
            **_finite_floats(cls),
        )
        for cls in outcomes
    ]
    return st.one_of(*others, *ended)


def _finite_floats(cls: type[Payload]) -> dict[str, st.SearchStrategy[float | None]]:
    """Finite floats for the float members of ``cls``: NaN and infinity are not JSON, and the
    wire refuses them (``codec.decode``)."""
    finite = st.floats(allow_nan=False, allow_infinity=False)
    out: dict[str, st.SearchStrategy[float | None]] = {}
    for name, kind in field_types(cls).items():
        if kind is float:
            out[name] = finite
        elif kind == float | None:
            out[name] = st.none() | finite
    return out
