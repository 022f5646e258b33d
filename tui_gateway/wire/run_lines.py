"""The lines of ``desk run --json`` (:mod:`contract.run`), written to stdout.

Events of the run's session are handed to a delivery thread of their own
(:class:`~contract.subscription.Subscription`, with a longer interval than the gateway's), so
the reply's deltas are joined into at most one line every
:data:`~contract.run.DELTA_INTERVAL_S` seconds and a control event flushes what
waits, in order. Lines are serialized as on the wire (:func:`tui_gateway.wire.codec.dumps` of
``Payload.to_wire``). Exactly one ``turn.completed`` is written, last: the turn's own, or the one
:meth:`RunLines.close` is given when the turn never ended by itself (a refusal before it
started, a shutdown before it existed).
"""

from __future__ import annotations

import threading
from typing import TextIO

from contract.envelope import GatewayEvent, Payload
from contract.events import MessageComplete
from contract.run import DELTA_INTERVAL_S, RUN_EVENT_OF, SessionStarted
from contract.subscription import Subscription
from tui_gateway.wire.codec import dumps


class RunLines:
    """Writes one run's lines to ``out``. Thread-safe.

    Args:
        out: where the lines go (stdout); a closed stream is ignored (the run goes on).
        interval_s: seconds between two ``message.delta`` lines.
    """

    def __init__(self, out: TextIO, *, interval_s: float = DELTA_INTERVAL_S) -> None:
        self._out = out
        self._lock = threading.Lock()
        self._completed = False
        self._joiner = Subscription(self._write, coalesce_s=interval_s, name="desk-run-lines")

    def started(self, session_id: str, payload: SessionStarted) -> None:
        """Write the ``session.started`` line (the first)."""
        self._joiner.publish(GatewayEvent(payload.TYPE, session_id, 0, payload))

    def event(self, event: GatewayEvent) -> None:
        """Write the line of a gateway event of the run's session, if it has one."""
        if type(event.payload) in RUN_EVENT_OF:
            self._joiner.publish(event)

    def close(self, session_id: str, last: MessageComplete) -> None:
        """Write what waits, then ``last`` as ``turn.completed`` unless the turn's own was
        written; nothing is written after this."""
        self._joiner.publish(GatewayEvent(last.TYPE, session_id, 0, last))
        self._joiner.close(timeout_s=10.0)

    def _write(self, event: GatewayEvent) -> None:
        payload: Payload = event.payload
        name = SessionStarted.TYPE if isinstance(payload, SessionStarted) else None
        name = name or RUN_EVENT_OF.get(type(payload))
        with self._lock:
            if name is None or self._completed:
                return
            self._completed = isinstance(payload, MessageComplete)
            line = {"type": name, "session_id": event.session_id, "payload": payload.to_wire()}
            try:
                self._out.write(dumps(line) + "\n")
                self._out.flush()
            except (OSError, ValueError):  # stdout closed (piped into head): the run goes on
                pass
