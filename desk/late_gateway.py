"""The embedded gateway, built once the app's first frame is on screen.

Building the gateway loads the agent's runtime, the tools, the provider, the store and MCP
(most of the modules desk runs with) and opens the session database: about a second of CPU,
several with the cores busy. The app does not need any of it to draw its first frame, so
``desk`` hands the app a :class:`LateGateway` and the app starts the build on a thread of its
own once that frame is painted (:meth:`desk.app.DeskApp.on_mount`). Keys typed meanwhile are
the prompt box's as at any time; an Enter among them waits for the session
(:meth:`desk.screens.desk_screen.DeskScreen.desk_ready`), which is created once the gateway is
built.

Whoever reaches the gateway before it is built (a quit typed during the start, a stop key on
the terminal's input thread) waits for the build on its own thread: nothing is dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from contract.results import ShutdownReport

if TYPE_CHECKING:
    from contract.ports import DeskGateway


@dataclass(frozen=True, slots=True)
class Built:
    """What a gateway build gives.

    Attributes:
        gateway: the gateway.
        notice: one line the desk shows at start (why sessions are not saved, the sandbox), or "".
        saved: False when sessions are not saved (no database).
    """

    gateway: DeskGateway
    notice: str = ""
    saved: bool = True


Done = Callable[[BaseException | None], None]
"""Called on the build's thread once the build ended: None, or what it raised."""


class LateGateway:
    """Stands for the gateway until it is built; then every attribute is the gateway's.

    Args:
        build: builds the gateway (called once, on the build's thread, by :meth:`start`).
    """

    def __init__(self, build: Callable[[], Built]) -> None:
        self._build = build
        self._built: Built | None = None
        self._error: BaseException | None = None
        self._started = False
        self._done: list[Done] = []
        self._ended = threading.Event()
        self._lock = threading.Lock()

    @property
    def port(self) -> DeskGateway:
        """This object, typed as the gateway it stands for (its attributes are the gateway's)."""
        return cast("DeskGateway", self)

    @property
    def built(self) -> Built | None:
        """What the build gave (None until it is built, or when it failed)."""
        return self._built

    @property
    def ended(self) -> bool:
        """True once the build ended, built or failed (thread-safe)."""
        return self._ended.is_set()

    @property
    def running_turns(self) -> int:
        """How many turns run: none before the gateway is built (a quit typed during the start
        reads it on the UI thread, which must not wait for the build)."""
        built = self._built
        return built.gateway.running_turns if built is not None else 0

    def start(self, done: Done) -> None:
        """Build the gateway on a thread of its own, once; ``done`` is called when it ended.

        Args:
            done: called with None or the build's error, on the build's thread (at once, on
                this thread, when the build had already ended: a stop key or a quit read on
                the terminal's input thread may have started it first).
        """
        with self._lock:
            ended = self._ended.is_set()
            if not ended:
                self._done.append(done)
            begin, self._started = not self._started, True
        if ended:
            done(self._error)
        elif begin:
            threading.Thread(target=self._run, name="desk-gateway-build").start()

    def _run(self) -> None:
        try:
            self._built = self._build()
        except BaseException as exc:  # noqa: BLE001 - given to the app, which says it and exits
            self._error = exc
        with self._lock:
            self._ended.set()
            done, self._done = self._done, []
        for call in done:
            call(self._error)

    def wait(self) -> DeskGateway:
        """The gateway, once built (waits for the build; starts it if nobody did).

        Raises:
            BaseException: whatever the build raised.
        """
        self.start(lambda _error: None)
        self._ended.wait()
        if self._built is None:
            assert self._error is not None
            raise self._error
        return self._built.gateway

    def shutdown(self, timeout_s: float | None = None) -> ShutdownReport:
        """The gateway's shutdown; nothing to do when it was never built, or its build failed.

        Args:
            timeout_s: passed to the gateway's ``shutdown``.
        """
        with self._lock:
            never = not self._started
            self._started = True  # a build not begun now never begins
            if never:
                self._error = RuntimeError("desk quit before its gateway was built")
                self._ended.set()
        if never:
            return ShutdownReport(turns_stopped=0, prompts_dropped=0)
        self._ended.wait()
        if self._built is None:
            return ShutdownReport(turns_stopped=0, prompts_dropped=0)
        return self._built.gateway.shutdown(timeout_s)

    def __getattr__(self, name: str) -> object:
        # only names this class does not define: the gateway's methods and attributes
        return getattr(self.wait(), name)
