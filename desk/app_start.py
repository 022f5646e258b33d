"""How the desk comes up: its gateway (built after the first frame when it is late), then the
session on screen, the prompts typed meanwhile, and the model server asked.

A :class:`~desk.late_gateway.LateGateway` is built on a thread once the first frame is out (the
keys typed meanwhile wait in the prompt box); its end is posted as
:class:`~desk.messages.GatewayBuilt`, and :meth:`DeskStart.built` brings the session up then.
A failed build ends the app (exit code 1).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.app import App
from textual.message import Message

from desk.late_gateway import LateGateway
from desk.messages import GatewayBuilt
from desk.screens.desk_screen import DeskScreen
from desk.slash import console_slash_commands

if TYPE_CHECKING:
    from desk.bridge import GatewayBridge
    from desk.controllers import DeskControllers
    from desk.screens.desk_widgets import DeskWidgets


class DeskStart:
    """The desk's start (see the module's docstring).

    Args:
        app: the desk.
        controllers: the desk's controllers (asked for when used: they are built after).
        widgets: the main screen's widgets.
        late: the gateway being built after the first frame, or None when it is built.
        bridge: delivers the gateway's events to the desk (started with the session).
    """

    def __init__(
        self,
        app: App[int],
        controllers: Callable[[], DeskControllers],
        widgets: DeskWidgets,
        late: LateGateway | None,
        bridge: GatewayBridge,
    ) -> None:
        self._app = app
        self._controllers = controllers
        self._widgets = widgets
        self._late = late
        self._bridge = bridge

    async def begin(self) -> None:
        """The app is mounted: bring the session up, or build the gateway first (after the
        first frame)."""
        if self._late is None:
            await self._gateway_up()
        else:  # built once the first frame is out; keys typed meanwhile wait in the box
            built = lambda error: self.post_from_thread(GatewayBuilt(error))  # noqa: E731
            self._app.call_after_refresh(self._late.start, built)

    def post_from_thread(self, message: Message) -> None:
        """Post ``message`` to the app from any thread (nothing once its loop has closed)."""
        with contextlib.suppress(RuntimeError):  # the app's loop has closed already
            self._app.post_message(message)

    def starting(self) -> bool:
        """True while the desk is not ready for prompts yet: the gateway being built, then
        the session being opened (any thread: one attribute read on the screen, two on the
        build). False once the build failed (the desk then ends)."""
        late = self._late
        if late is None or (late.ended and late.built is None):
            return False
        screen = self.desk_screen()
        return screen is None or not screen.ready  # none yet: starting

    def desk_screen(self) -> DeskScreen | None:
        """The main screen, once pushed (any thread: one list read)."""
        stack = self._app.screen_stack
        screen = stack[0] if stack else None
        return screen if isinstance(screen, DeskScreen) else None

    async def built(self, message: GatewayBuilt) -> None:
        """The gateway is built: the session starts. A failed build ends the app (exit 1).
        After a quit typed meanwhile, only to send the prompts typed before it (the quit
        waits for them: it then stops them, or saves them as not sent)."""
        app, c = self._app, self._controllers()
        quit = c.quit
        screen = self.desk_screen()
        waiting = screen is not None and screen.prompts_waiting
        if quit.started and not (waiting and quit.takes_prompts):
            return
        if message.error is not None:
            app.exit(1, message=f"desk: cannot start the gateway: {message.error}")
            return
        if self._late is not None and self._late.built is not None:
            c.sessions.started(self._late.built.notice, self._late.built.saved)
        await self._gateway_up()

    async def _gateway_up(self) -> None:
        """The session on screen, and what the gateway tells the desk."""
        app, c, prompt = self._app, self._controllers(), self._widgets.prompt
        self._bridge.start()
        prompt.console_commands = console_slash_commands(c.console.load_commands())
        await c.sessions.start()  # a new session, or the resumed one (--resume)
        screen = self.desk_screen()
        if screen is not None:  # Enter typed while the desk started: send it now
            await screen.desk_ready()
        app.refresh_bindings()  # Stop was kept live while the desk started: dimmed when idle
        status = self._widgets.status
        app.watch(status, "model", lambda _model: c.server.model_changed(), init=False)
        # Asked in the background, once the first frame is on screen: the check's thread
        # imports the HTTP client, which would compete with the first frame for the GIL.
        app.call_after_refresh(c.server.start)
