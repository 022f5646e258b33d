"""The model server the gateway talks to: where it is, whether it answers, what it lists.

The gateway starts whatever the server's state: a server that cannot be reached, or that
refuses the API key, is a state (:class:`~contract.server_events.ServerState`) published as
``server.status``, never a reason to exit, so saved sessions stay readable. Once asked to
(:meth:`ModelServer.check`), a thread of its own asks ``GET {base_url}/models`` and asks again
while the answer is bad, waiting :data:`BACKOFF_S` between attempts (the last figure repeats);
:meth:`ModelServer.check` also cuts a wait short. :meth:`ModelServer.switch` points the gateway
at another server at run time (``/server URL``).

While the last answer is bad, a prompt is refused with that one line
(:meth:`ModelServer.refusal`) and the thread asks again at once; so is a prompt for a model the
server does not list (llama.cpp lists the one it serves, Ollama and vLLM theirs).

A server that goes away at run time is found the same way (:meth:`ModelServer.turn_failed`): a
turn whose request could not connect makes the state ``unreachable`` at once, and a turn whose
connection failed otherwise (a stream cut short, a timeout) has the server asked now; either
way the thread then asks again with the back-off until it answers, as at start.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from agent.provider.client import ProviderConfig
from agent.provider.connection import warm_up
from agent.provider.errors import ConnectFailed, EarlyClose, ProviderError
from agent.valid_text import loads, valid_text
from contract.errors import GatewayError
from contract.server_events import ServerState, ServerStatus
from tui_gateway.servers.server_yield import ServerYield
from tui_gateway.sessions.state import Session

if TYPE_CHECKING:
    pass  # imported where it is used: not before desk's first frame

BACKOFF_S: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0, 10.0)
"""Seconds between attempts while the server does not answer well (the last one repeats)."""

CHECK_TIMEOUT_S = 5.0
"""Bound of one ``GET /models``, in seconds."""

STICKY = "server.status"
"""The key the latest status is kept under for subscribers that come later."""

Publish = Callable[..., None]
"""The gateway's event hub's ``publish(session, payload, sticky=KEY)`` (never blocks): the
status goes to every subscriber, and a later one gets the latest first."""


def listed_models(data: object) -> list[str]:
    """The model ids of a ``GET /models`` answer (OpenAI's ``data``, or ``models``), in order."""
    if not isinstance(data, dict):
        return []
    items = data.get("data")
    if not isinstance(items, list):
        items = data.get("models")  # some servers list only ``models``
    if not isinstance(items, list):
        return []
    ids: list[str] = []
    for item in items:
        if isinstance(item, dict):
            name = item.get("id") or item.get("model") or item.get("name")
            if isinstance(name, str) and name:
                ids.append(valid_text(name))
    return ids


def one_line(exc: BaseException) -> str:
    """Why a request got no answer, in a few words."""
    import httpx

    if isinstance(exc, httpx.ConnectError):
        text = str(exc).lower()
        if "refused" in text or _refused(exc):
            return "connection refused"
        if "name or service" in text or "nodename" in text or "resolution" in text:
            return "the host name does not resolve"
    if isinstance(exc, httpx.TimeoutException):
        return "no answer in time"
    if isinstance(exc, httpx.RemoteProtocolError) or _caused_by(exc, ConnectionResetError):
        return "connection reset"  # a server going down as it was asked
    return " ".join(str(exc).split()) or type(exc).__name__


def _refused(exc: BaseException) -> bool:
    """True when a ``ConnectionRefusedError`` is among ``exc``'s causes (an asyncio connect
    says "Connect call failed" in its text)."""
    return _caused_by(exc, ConnectionRefusedError)


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    """True when an exception of ``kind`` is ``exc`` or among its first causes."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def ask_models(
    base_url: str, api_key: str | None, timeout_s: float = CHECK_TIMEOUT_S
) -> tuple[int | None, list[str], str]:
    """``GET {base_url}/models`` once.

    Returns:
        ``(HTTP status or None, model ids, why there was no answer)``; never raises.
    """
    import httpx

    from agent.provider.tls import shared_ssl_context

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        verify = shared_ssl_context()
        with httpx.Client(
            headers=headers, timeout=timeout_s, trust_env=False, verify=verify
        ) as client:
            response = client.get(base_url.rstrip("/") + "/models")
    except httpx.HTTPError as exc:
        return None, [], one_line(exc)
    except Exception as exc:  # an odd URL: say it, never die
        return None, [], one_line(exc)
    try:
        models = listed_models(loads(response.content)) if response.status_code == 200 else []
    except ValueError:
        models = []
    return response.status_code, models, ""


class ModelServer:
    """The gateway's model server and its state. Thread-safe.

    Args:
        provider: where the server is, the key, and the model new sessions use ("" to take the
            first one the server lists).
        publish: the event hub's publish; each new status is sent gateway-wide, sticky.
        on_ready: called on the checking thread each time the server answers after it had
            not (with the provider as it is then): sessions learn their window again.
        ask: asks the server once (injectable; the default is :func:`ask_models`).
        backoff_s: seconds between attempts while the answer is bad.
        server_nice: a server on this machine in another session yields the CPU to desk at
            this group nice while the gateway runs (:mod:`~tui_gateway.servers.server_yield`);
            0 leaves it alone.
    """

    def __init__(
        self,
        provider: ProviderConfig,
        publish: Publish,
        *,
        on_ready: Callable[[ProviderConfig], None] | None = None,
        ask: Callable[[str, str | None], tuple[int | None, list[str], str]] = ask_models,
        backoff_s: tuple[float, ...] = BACKOFF_S,
        server_nice: int = 0,
    ) -> None:
        self._provider = provider
        self._yield = ServerYield(server_nice)
        self._publish = publish
        self._ask = ask
        self._backoff = backoff_s
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._status = ServerStatus(ServerState.CHECKING, provider.base_url, provider.model)
        self._generation = 0  # bumped by switch(): an answer about an older server is dropped
        self._due = False  # an attempt is wanted now
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None
        self._closed = False
        self.on_ready = on_ready
        """Called on the checking thread when the server answers after it had not."""

    # -- reading -------------------------------------------------------------------------------

    @property
    def provider(self) -> ProviderConfig:
        """Where requests go now, with the model new sessions use."""
        with self._lock:
            return self._provider

    def status(self) -> ServerStatus:
        """The state as last found."""
        with self._lock:
            return self._status

    def refuse(self, model: str) -> None:
        """Refuse a prompt for ``model`` that cannot be sent now; a refusal because the
        server does not answer well also asks it again at once (it may have just started).

        Raises:
            GatewayError: why, in one line: the server cannot be reached or refused the key,
                or it does not list ``model`` (the message names what it lists).
        """
        status = self.status()
        if status.problem:
            self.check()
            raise GatewayError(status.problem)
        problem = status.model_problem(model or status.model)
        if problem:
            raise GatewayError(problem + "; /model NAME picks one")

    def for_session(self, session: Session) -> ProviderConfig:
        """Where the session's turns go: the server now, with the session's model (the
        server's default while the session has none)."""
        provider = self.provider
        with session.lock:
            if not session.model and provider.model:  # made before the server named one
                session.model = provider.model
            return replace(provider, model=session.model or provider.model)

    def set_model(self, session: Session, model: str) -> str:
        """Use ``model`` for the session's next turns (GatewayError: see :meth:`checked_model`);
        returns the name used (stripped)."""
        name = self.checked_model(model)
        with session.lock:
            session.model = name
        return name

    def checked_model(self, model: str) -> str:
        """``model`` stripped, once it is known to be one the server can use.

        Raises:
            GatewayError: an empty name, or one the server does not list (code -32602).
        """
        name = model.strip()
        if not name:
            raise GatewayError("the model name is empty", code=-32602)
        problem = self.status().model_problem(name)
        if problem:
            raise GatewayError(problem, code=-32602)
        return name

    # -- changing ------------------------------------------------------------------------------

    def turn_failed(self, failure: ProviderError) -> None:
        """A turn's request to the server failed with ``failure``.

        One that could not connect (refused, a connect timeout, a name that does not resolve)
        makes the state ``unreachable`` now, published, so the next prompt is refused and
        kept, as at start; the thread then asks with the back-off until the server answers.
        One whose connection failed otherwise (a stream cut short, a read timeout) has the
        server asked now, which finds out whether it went away. An answer of the server (an
        HTTP status) changes nothing here.
        """
        import httpx

        cause = failure.__cause__
        if isinstance(failure, ConnectFailed) and isinstance(
            cause, (httpx.ConnectError, httpx.ConnectTimeout)
        ):
            self._lost(one_line(cause))
        elif failure.status is None and (
            isinstance(failure, (ConnectFailed, EarlyClose)) or type(failure) is ProviderError
        ):
            self.check()

    def _lost(self, why: str) -> None:
        """The server stopped answering: ``unreachable`` (``why`` in a few words), published,
        and asked again at once."""
        with self._lock:
            if self._closed or self._status.state != ServerState.READY:
                status = None  # already known (or still being asked): the check says
            else:
                status = ServerStatus(
                    ServerState.UNREACHABLE,
                    self._provider.base_url,
                    self._provider.model,
                    message=why,
                    attempts=self._status.attempts,
                )
                self._status = status
        if status is not None:
            self._publish(None, status, sticky=STICKY)
        with self._lock:
            asked = self._thread is not None
        if asked:  # a gateway never asked to check the server asks nothing by itself
            self.check()

    def check(self) -> None:
        """Ask the server now (in the background; the answer is published)."""
        with self._lock:
            if self._closed:
                return
            self._due = True
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="gateway-model-server", daemon=True
                )
                self._thread.start()
            self._wake.notify_all()

    def switch(self, base_url: str, api_key: str | None = None) -> ServerStatus:
        """Use the server at ``base_url`` from now on (the key is kept unless given) and ask
        it at once. Sessions keep their models (a model it does not list is refused then).

        Returns:
            the new status (``checking``).

        Raises:
            GatewayError: ``base_url`` is not an http(s) URL (code -32602).
        """
        url = base_url.strip().rstrip("/")
        scheme, _, rest = url.partition("://")
        if scheme not in ("http", "https") or not rest or any(c.isspace() for c in url):
            why = f"not a model server URL: {base_url!r} (http://HOST:PORT/v1)"
            raise GatewayError(why, code=-32602)
        base_url = url
        with self._lock:
            key = self._provider.api_key if api_key is None else api_key
            self._provider = replace(self._provider, base_url=base_url, api_key=key)
            self._generation += 1
            status = ServerStatus(ServerState.CHECKING, base_url, self._provider.model)
            self._status = status
        self._publish(None, status, sticky=STICKY)
        self.check()
        return status

    def use_model(self, model: str) -> None:
        """Make ``model`` the model new sessions use."""
        with self._lock:
            self._provider = replace(self._provider, model=model)
            self._status = replace(self._status, model=model)
            status = self._status
        self._publish(None, status, sticky=STICKY)

    def wait_answer(self, timeout_s: float) -> ServerStatus:
        """Ask now and wait (bounded, seconds) for the answer about the current server.

        Returns:
            the status then (still ``checking`` when no answer came in time).
        """
        with self._lock:
            wanted, before = self._generation, self._status.attempts
        self.check()
        deadline = time.monotonic() + timeout_s
        with self._wake:
            while not self._closed and self._generation == wanted:
                if self._status.attempts > before and not self._due:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._wake.wait(left)
            return self._status

    def close(self) -> None:
        """Stop asking (the thread ends after the request it may be making; :meth:`join`
        waits for it), and cancel the retry timer."""
        with self._lock:
            self._closed = True
            self._wake.notify_all()
            timer = self._timer
        if timer is not None:
            timer.cancel()
        self._yield.restore()

    def join(self, timeout_s: float = CHECK_TIMEOUT_S + 1.0) -> bool:
        """Wait for the thread and the timer to end after :meth:`close`, so that none runs
        once the process exits.

        Args:
            timeout_s: how long to wait for each, in seconds.

        Returns:
            True when no thread of it is left.
        """
        with self._lock:
            thread, timer = self._thread, self._timer
        if timer is not None and timer is not threading.current_thread():
            timer.join(timeout_s)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
        return not any(t is not None and t.is_alive() for t in (thread, timer))

    # -- the checking thread -------------------------------------------------------------------

    def _run(self) -> None:
        failures = 0
        while True:
            with self._lock:
                while not self._due and not self._closed:
                    self._wake.wait()
                if self._closed:
                    return
                self._due = False
                generation = self._generation
                provider = self._provider
                was_ready = self._status.state == ServerState.READY
            code, models, why = self._ask(provider.base_url, provider.api_key)
            status = self._status_of(provider, code, models, why)
            with self._lock:
                if self._closed:
                    return
                if generation != self._generation:
                    continue  # switched meanwhile: the new server is asked next
                bad = status.state != ServerState.READY
                failures = failures + 1 if bad else 0
                wait_s = self._backoff[min(failures, len(self._backoff)) - 1] if bad else None
                model = self._provider.model or (models[0] if models else "")
                if model != self._provider.model:
                    self._provider = replace(self._provider, model=model)
                status = replace(
                    status, model=model, retry_s=wait_s, attempts=self._status.attempts + 1
                )
                self._status = status
                ready_now = not bad and not was_ready
                provider = self._provider
                self._wake.notify_all()
            self._publish(None, status, sticky=STICKY)
            if ready_now and self.on_ready is not None:
                self.on_ready(provider)
            if ready_now:  # here, not in the first turn (or its stop, or a quit) on a busy machine
                self._yield.follow(provider.base_url)
                warm_up()
            if wait_s is not None:
                self._sleep(wait_s, generation)

    def _sleep(self, seconds: float, generation: int) -> None:
        """Wait ``seconds`` before the next attempt, or less when asked (or switched)."""
        timer = threading.Timer(seconds, self._due_now, args=(generation,))
        timer.daemon = True
        with self._lock:
            if self._closed:
                return
            self._timer = timer
            timer.start()

    def _due_now(self, generation: int) -> None:
        with self._lock:
            if generation == self._generation and self._status.state != ServerState.READY:
                self._due = True
                self._wake.notify_all()

    @staticmethod
    def _status_of(
        provider: ProviderConfig, code: int | None, models: list[str], why: str
    ) -> ServerStatus:
        url, model = provider.base_url, provider.model
        if code is None:
            return ServerStatus(ServerState.UNREACHABLE, url, model, message=why)
        if code in (401, 403):
            return ServerStatus(ServerState.REFUSED, url, model, message=str(code))
        return ServerStatus(ServerState.READY, url, model, models=list(models))


def status_line(status: ServerStatus, model: str = "") -> str:
    """``/server``'s answer: the server, its state and what it lists, in one line; when it
    does not list ``model`` (the session's), which ``/model`` to use instead."""
    if status.state == ServerState.CHECKING:
        return f"asking the model server at {status.base_url}…"
    if status.problem:
        retry = f" (asking again every {status.retry_s:g} s)" if status.retry_s else ""
        return status.problem + retry
    listed = f"lists {status.listing()}" if status.models else "lists no models"
    using = model or status.model
    if using and not status.lists(using):  # the session's model: refused there
        pick = status.models[0] if len(status.models) == 1 else "NAME"
        return (
            f"the model server at {status.base_url} answers and {listed}, not {using}: "
            f"/model {pick} to use {'it' if len(status.models) == 1 else 'one of them'}"
        )
    return f"the model server at {status.base_url} answers and {listed}; using {using or '?'}"
