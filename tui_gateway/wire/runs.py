"""Runs started over HTTP: start one without missing an event, stop one, book a client that left.

A run is a turn started by ``desk serve`` (its id is the turn id). :class:`Runs` is what the
HTTP routes (:mod:`tui_gateway.wire.http_api`) and the OpenAI facade
(:mod:`tui_gateway.wire.openai_facade`) share: it registers a listener for the session before it
submits the prompt, remembers which session each run belongs to (for
``POST /v1/runs/{id}/stop``), and stops a run as the stop says: a running one is interrupted, a
queued one removed.

Attribution: the stop route passes a user stop (``api.stop``); a client that leaves a run's
stream (or the facade's request) before its end is a system stop (``api.disconnect``), made here
by :meth:`Runs.client_gone`.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict

from agent.stops import StopRequest, Surface
from contract.errors import GatewayError
from tui_gateway.gateway import Gateway
from tui_gateway.wire.http_common import HttpError, http_error_of
from tui_gateway.wire.router import EventRouter, Listener

MAX_RUNS = 10_000
"""Run ids remembered for ``POST /v1/runs/{id}/stop`` (the oldest are forgotten first)."""


class Runs:
    """The runs of one ``desk serve``.

    Args:
        gateway: the in-process gateway.
        router: the event router listeners are registered with.
        max_runs: run ids remembered (the oldest are forgotten first).
    """

    def __init__(self, gateway: Gateway, router: EventRouter, *, max_runs: int = MAX_RUNS) -> None:
        self.gateway = gateway
        self.router = router
        self._max_runs = max_runs
        self._runs: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, run_id: str, session_id: str) -> None:
        """Note that ``run_id`` is a turn of ``session_id`` (for the stop route)."""
        with self._lock:
            self._runs[run_id] = session_id
            while len(self._runs) > self._max_runs:
                self._runs.popitem(last=False)

    def session_of(self, run_id: str) -> str | None:
        """The session of a run started here, or None."""
        with self._lock:
            return self._runs.get(run_id)

    def stop(self, session_id: str, run_id: str, stop: StopRequest) -> bool:
        """Stop the run with ``stop`` if it runs, or remove it if it is queued.

        Returns:
            False when the run had already ended (or its session is gone).
        """
        try:
            if self.gateway.session_interrupt(session_id, stop, turn_id=run_id) is not None:
                return True
            return self.gateway.prompt_remove(session_id, run_id)
        except GatewayError:
            return False

    def client_gone(self, session_id: str, run_id: str) -> None:
        """The client of a run left before its end: a system stop (``api.disconnect``)."""
        stop = StopRequest.by_system(Surface.API_DISCONNECT, "the HTTP client went away")
        self.stop(session_id, run_id, stop)

    async def start(self, session_id: str, prompt: str) -> tuple[Listener, str, bool]:
        """Submit ``prompt`` with a listener registered first, so no event of the run is missed.

        Returns:
            the listener (close it when done), the run id and whether it was queued.

        Raises:
            HttpError: 404 unknown session, 400 refused prompt, 503 shutting down.
        """
        if session_id not in self.gateway.live_sessions():
            raise HttpError(404, f"no session {session_id!r}", "not_found_error")
        listener = self.router.listen(session_id)
        try:  # off the loop: starting the turn's thread may wait for the GIL
            submitted = await asyncio.to_thread(self.gateway.prompt_submit, session_id, prompt)
        except GatewayError as exc:
            listener.close()
            raise http_error_of(exc) from None
        self.remember(submitted.turn_id, session_id)
        return listener, submitted.turn_id, submitted.queued
