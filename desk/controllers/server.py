"""The model server on screen: whether it answers, in one line, and what it lists.

The desk starts whatever the server's state: it asks the gateway to check the server
(``server.status`` with ``check``) once it is on screen, and every answer comes back as a
``server.status`` event. A server that cannot be reached, or refuses the API key, is one line
in the status bar for as long as it lasts and one line in the transcript when it starts (not on
every retry): saved sessions can be read, resumed and exported meanwhile, and the gateway asks
again with a back-off (a prompt sent meanwhile is refused with that line and stays in the
prompt box). When the server answers after it had not, a line says so. A model the server
does not list is said the same way. ``/server URL`` and ``/model NAME`` (console commands)
change both at run time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from contract.errors import GatewayError
from contract.server_events import ServerState, ServerStatus
from desk.config import ConnectionInfo
from desk.controllers.ports import Notify
from desk.controllers.turns import shown
from desk.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from contract.ports import DeskGateway
    from desk.controllers.view import ShownSession

RETRY_HINT = (
    "asked again every few seconds; saved sessions can be read meanwhile (Ctrl+B), "
    "/server URL uses another server"
)
"""What the transcript's line about an unreachable server adds."""


def short_problem(status: ServerStatus, model: str) -> str:
    """The status bar's words for what keeps prompts from being sent ("" for nothing)."""
    if status.state == ServerState.UNREACHABLE:
        return "⚠ server unreachable · retrying"
    if status.state == ServerState.REFUSED:
        return f"⚠ server refused the key ({status.message})"
    if status.model_problem(model):
        return "⚠ model not on the server · /model"
    return ""


class ServerController:
    """Keeps what the desk shows of the model server.

    Args:
        gateway: the gateway (``server.status``).
        status: the status bar (its server line, the server and the model shown).
        connection: the server as the desk started with it.
        model: the model of the session shown.
        view: the view of the session shown now, if any.
        notify: shows a toast.
        listed: told, whenever the server's answer or the shown session's model changes,
            whether the server lists that model (False only for an answer that lists others:
            the context gauge counts nothing for it, ``ctx –``).
    """

    def __init__(
        self,
        gateway: DeskGateway,
        *,
        status: StatusBar,
        connection: ConnectionInfo,
        model: Callable[[], str],
        view: Callable[[], ShownSession | None],
        notify: Notify,
        listed: Callable[[bool], None] = lambda _listed: None,
    ) -> None:
        self._gateway = gateway
        self._status = status
        self._connection = connection
        self._model = model
        self._view = view
        self._notify = notify
        self._listed = listed
        self.server = ServerStatus(ServerState.CHECKING, connection.base_url, connection.model)
        """The server's state as last heard."""
        self._said = ""  # the problem the transcript was last told about ("" for none)
        self._heard = False  # a status came from the gateway (its URL is the one in use)

    @property
    def models(self) -> tuple[str, ...]:
        """The models the server lists (empty until it answered)."""
        return tuple(self.server.models)

    async def start(self) -> None:
        """Ask the gateway to check the server (in the background) and show what it knows."""
        try:
            self._gateway.server.check()
            await self.changed(self._gateway.server.status())
        except GatewayError as exc:  # a gateway in a child process that has gone
            self._notify(shown(exc.message), title="Model server", severity="error")

    async def changed(self, payload: ServerStatus) -> None:
        """``server.status``: the status bar, and a line in the transcript when the problem
        starts, changes or ends."""
        before, self.server = self.server, payload
        heard, self._heard = self._heard, True
        bar = self._status
        if not bar.is_attached:
            return
        if heard and payload.base_url != before.base_url:  # /server moved it
            moved = replace(bar.connection, base_url=payload.base_url, is_demo=False)
            bar.connection = moved
            bar.refresh_server()
        if not bar.model and not bar.connection.model and payload.model:
            bar.model = payload.model  # the server named the model to use
        model = self._model() or payload.model
        bar.server_problem = short_problem(payload, model)
        self._listed(not payload.model_problem(model))
        problem = payload.problem or payload.model_problem(model)
        if problem and problem != self._said:
            self._said = problem
            hint = RETRY_HINT if payload.state == ServerState.UNREACHABLE else ""
            hint = hint or ("/model NAME picks one" if payload.model_problem(model) else "")
            await self._say(f"✖ {problem}" + (f" — {hint}" if hint else ""), error=True)
        elif not problem and payload.state == ServerState.READY and self._said:
            self._said = ""
            await self._say(f"✓ the model server at {payload.base_url} answers: prompts go")
            self._notify(shown(f"{payload.base_url} answers"), title="Model server")

    def model_changed(self) -> None:
        """The shown session's model changed: say at once whether the server lists it."""
        if self._status.is_attached:
            model = self._model() or self.server.model
            self._status.server_problem = short_problem(self.server, model)
            self._listed(not self.server.model_problem(model))

    async def _say(self, line: str, *, error: bool = False) -> None:
        view = self._view()
        if view is not None and view.is_attached:
            await view.add_note(line, error=error, scroll=True)
        else:
            if error:
                self._notify(shown(line), title="Model server", severity="error")
            else:
                self._notify(shown(line), title="Model server")
