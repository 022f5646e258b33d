"""The scheduler ``desk serve`` runs: each schedule's firings at their due times, on one host.

A loop thread keeps each schedule's next due time (:meth:`ScheduleSettings.next_due`, from the
``clock``). When one is reached, the host claims the firing in the store (an insert keyed by
schedule and due time: of several hosts on one database exactly one wins) and the winner runs
it on a thread of its own (:func:`~tui_gateway.schedules.firing.run_firing`).

**Missed firings.** At start, a schedule whose last firing in the store is older than its
latest due time (the host was not running then) fires once for that latest due time, however
many were missed; a schedule that never fired waits for its next due time. The same holds
while running: a loop that finds several due times passed (a suspended machine) fires once.

**Sessions.** A firing's session is live on the host that runs it; once the host's last firing
of that schedule has its outcome, the session is let go (its claim given back) so the next
firing may run on another host. A person can open it meanwhile; a firing whose session stays
open elsewhere until its timeout ends ``failed(SessionBusy)`` without a turn.

**Approvals.** Nobody is asked: a tool call that asks first is denied (``approval =
"deny"``, the default; the model is told no person declined it) or allowed once (``"allow"``).

**Stopping.** :meth:`Scheduler.stop` (the shutdown of ``desk serve``) claims nothing more; each
firing stops its turn as the system (``gateway.shutdown``; one still queued behind another
never runs), and the scheduler waits for the firings' threads, bounded; the gateway's own
shutdown follows.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping

from agent.store import Firings, StoreError
from contract.events import ApprovalRequest, ChildStarted, GatewayEvent, GatewayStopping
from contract.subscription import Subscription
from tui_gateway.gateway import Gateway
from tui_gateway.schedules.firing import NoTurn, RunningFiring, run_firing
from tui_gateway.schedules.memory import MemoryFirings
from tui_gateway.settings.schedule_settings import ScheduleApproval, ScheduleSettings
from tui_gateway.turns.approvals import refused

Clock = Callable[[], float]
"""Wall-clock source, unix seconds."""

TICK_S = 1.0
"""Longest wait of the loop between two looks at the clock, in seconds."""

JOIN_S = 15.0
"""How long :meth:`Scheduler.stop` waits for the firings' threads, in seconds."""

UNMATCHED = 64
"""Approval requests and child starts of turns not known (yet) to be a firing's kept, at most:
a firing's turn may ask before its firing thread noted the turn."""


def _stderr(line: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)


class Scheduler:
    """Runs schedules' firings on one host. Thread-safe.

    Args:
        gateway: the gateway the firings' turns run on (its store holds the firings).
        schedules: the schedules, by name.
        gateway_for: the gateway of a schedule whose ``workspace`` is not ``gateway``'s
            (None: every schedule runs on ``gateway``); the scheduler shuts those down.
        clock: wall-clock source (unix seconds): due times.
        tick_s: longest wait between two looks at the clock, in seconds.
        say: where one-line notes go (a firing that failed to run, a loop error).
    """

    def __init__(
        self,
        gateway: Gateway,
        schedules: Mapping[str, ScheduleSettings],
        *,
        gateway_for: Callable[[ScheduleSettings], Gateway] | None = None,
        clock: Clock = time.time,
        tick_s: float = TICK_S,
        say: Callable[[str], None] = _stderr,
    ) -> None:
        self.gateway = gateway
        self.schedules = dict(schedules)
        store = gateway.store
        self.firings: Firings = store.firings if store is not None else MemoryFirings()
        self._gateway_for = gateway_for
        self._clock = clock
        self._tick_s = tick_s
        self._say = say
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._handover = threading.Lock()  # a session's release vs a firing counting itself
        self._threads: list[threading.Thread] = []
        self._running: dict[str, RunningFiring] = {}  # by turn id (child agents' too)
        self._unmatched: deque[tuple[Gateway, GatewayEvent]] = deque(maxlen=UNMATCHED)
        self._active: dict[str, int] = {}  # firings running per schedule on this host
        self._gateways: dict[str, Gateway] = {}  # by workspace
        self._subs: list[tuple[Gateway, Subscription]] = []
        self._loop: threading.Thread | None = None
        self.ran: list[tuple[str, float, str]] = []
        """``(schedule, due time, outcome)`` of each firing this host ran, in end order."""

    # -- the loop ------------------------------------------------------------------------------

    def start(self) -> Scheduler:
        """Fire what was missed (see the module docstring), then run the loop on a thread."""
        self._watch(self.gateway)
        due: dict[str, float] = {}
        now = self._clock()
        for spec in self.schedules.values():
            due[spec.name] = spec.next_due(now)
            missed = spec.last_due(now)
            try:
                last = self.firings.last_firings(spec.name)
            except StoreError as exc:
                self._say(f"schedule {spec.name}: cannot read its last firing: {exc.message}")
                continue
            if missed is not None and last and last[0].due_at < missed:
                self._claim_and_run(spec, missed)
        self._loop = threading.Thread(
            target=self._run_loop, args=(due,), name="desk-schedules", daemon=True
        )
        self._loop.start()
        return self

    @property
    def claiming(self) -> bool:
        """Whether the loop still claims firings: False once :meth:`stop` was called or the
        gateway began its shutdown (``gateway.shutdown`` over the API, say)."""
        return self._loop is not None and self._loop.is_alive()

    def wake(self) -> None:
        """Look at the clock now (a test's clock moved)."""
        self._wake.set()

    def _run_loop(self, due: dict[str, float]) -> None:
        while not self._stopping.is_set():
            try:
                now = self._clock()
                for spec in self.schedules.values():
                    if now >= due[spec.name]:
                        fire_at = spec.last_due(now) or due[spec.name]
                        due[spec.name] = spec.next_due(now)
                        self._claim_and_run(spec, fire_at)
                wait = min(due.values(), default=now + self._tick_s) - self._clock()
            except Exception as exc:  # noqa: BLE001 - the loop outlives what it did not expect
                self._say(f"schedules: {type(exc).__name__}: {exc}; going on")
                wait = self._tick_s
            self._wake.wait(min(max(wait, 0.0), self._tick_s))
            self._wake.clear()

    def _claim_and_run(self, spec: ScheduleSettings, due_at: float) -> None:
        try:
            won = self.firings.claim_firing(spec.name, due_at)
        except StoreError as exc:
            self._say(f"schedule {spec.name}: cannot claim its firing: {exc.message}")
            return
        if not won:
            return
        thread = threading.Thread(
            target=self._fire, args=(spec, due_at), name=f"desk-schedule-{spec.name}", daemon=True
        )
        with self._handover, self._lock:
            if self._stopping.is_set():
                self._end_quietly(spec, due_at, "interrupted_by_system(gateway.shutdown)")
                return
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
            self._active[spec.name] = self._active.get(spec.name, 0) + 1
        thread.start()

    def _fire(self, spec: ScheduleSettings, due_at: float) -> None:
        gateway = self.gateway
        outcome = "failed(Crash)"
        try:
            gateway = self._gateway_of(spec)
            outcome = run_firing(
                gateway,
                self.firings,
                spec,
                due_at,
                stopping=self._stopping,
                on_running=self._on_running,
            )
        except NoTurn as exc:
            outcome = exc.outcome
            self._say(f"schedule {spec.name}: no turn ran: {exc.message}")
        except Exception as exc:  # noqa: BLE001 - one firing's failure ends that firing only
            outcome = f"failed({type(exc).__name__})"
            self._say(f"schedule {spec.name}: {type(exc).__name__}: {exc}")
            self._end_quietly(spec, due_at, outcome)
        finally:
            self._finished(spec, gateway)
        with self._lock:
            self.ran.append((spec.name, due_at, outcome))

    def fire_now(self, name: str) -> str:
        """Run one firing of schedule ``name`` now, on this thread (``desk schedule run``): its
        due time is the clock's now.

        Returns:
            the outcome (an exit reason, or ``failed(<class>)`` when no turn ran).

        Raises:
            KeyError: no such schedule.
        """
        spec = self.schedules[name]
        due_at = self._clock()
        if not self.firings.claim_firing(spec.name, due_at):
            return "failed(Claimed)"
        self._watch(self.gateway)
        with self._handover, self._lock:
            self._active[spec.name] = self._active.get(spec.name, 0) + 1
        try:
            return run_firing(
                self._gateway_of(spec),
                self.firings,
                spec,
                due_at,
                stopping=self._stopping,
                on_running=self._on_running,
            )
        except NoTurn as exc:
            self._say(f"schedule {spec.name}: no turn ran: {exc.message}")
            return exc.outcome
        finally:
            self._finished(spec, self._gateway_of(spec))

    # -- running firings -----------------------------------------------------------------------

    def _on_running(self, firing: RunningFiring, running: bool) -> None:
        with self._lock:
            if running:
                self._running[firing.turn_id] = firing
                self._match_unmatched()
            else:  # the turn and its child agents
                self._running = {t: f for t, f in self._running.items() if f is not firing}

    def running(self) -> list[RunningFiring]:
        """The firings whose turns run (or wait in their session's queue) now."""
        with self._lock:
            return list({id(f): f for f in self._running.values()}.values())

    def _finished(self, spec: ScheduleSettings, gateway: Gateway) -> None:
        """One firing of ``spec`` is over here: the last one lets the session go.

        The count and the release are one step (``_handover``): a firing claimed meanwhile
        counts itself first (and the session stays), or opens the session after it went.
        """
        with self._handover:
            with self._lock:
                left = self._active.get(spec.name, 1) - 1
                self._active[spec.name] = left
            if left > 0 or gateway.store is None:
                return  # without a database the session stays: nobody else can open it
            try:
                session_id = self.firings.schedule_session(spec.name)
                if session_id is not None:
                    gateway.session_release(session_id)
            except StoreError as exc:
                self._say(f"schedule {spec.name}: cannot let its session go: {exc.message}")

    def _end_quietly(self, spec: ScheduleSettings, due_at: float, outcome: str) -> None:
        with contextlib.suppress(StoreError):
            self.firings.end_firing(spec.name, due_at, outcome)

    # -- gateways and approvals ----------------------------------------------------------------

    def _gateway_of(self, spec: ScheduleSettings) -> Gateway:
        if spec.workspace is None or self._gateway_for is None:
            return self.gateway
        key = str(spec.workspace)
        with self._lock:
            found = self._gateways.get(key)
        if found is not None:
            return found
        made = self._gateway_for(spec)
        with self._lock:
            found = self._gateways.setdefault(key, made)
        if found is not made:
            made.shutdown()
        else:
            self._watch(made)
        return found

    def _watch(self, gateway: Gateway) -> None:
        with self._lock:
            if any(g is gateway for g, _ in self._subs):
                return
        sub = gateway.subscribe(lambda event: self._on_event(gateway, event))
        with self._lock:
            self._subs.append((gateway, sub))

    def _on_event(self, gateway: Gateway, event: GatewayEvent) -> None:
        payload = event.payload
        if isinstance(payload, GatewayStopping) and gateway is self.gateway:
            self._stopping.set()  # shut down (over the API, say): nothing more is claimed
            self._wake.set()
            return
        if not isinstance(payload, ChildStarted | ApprovalRequest):
            return
        parent = payload.parent_turn_id if isinstance(payload, ChildStarted) else payload.turn_id
        with self._lock:
            firing = self._running.get(parent)
            if firing is None:
                # Perhaps a firing's turn that asks before its firing noted it: kept a while.
                self._unmatched.append((gateway, event))
                return
        self._answer(firing, gateway, event)

    def _answer(self, firing: RunningFiring, gateway: Gateway, event: GatewayEvent) -> None:
        """A firing's turn (or a child agent of it) started a child, or asks for approval."""
        if firing.gateway is not gateway:
            return
        payload = event.payload
        if isinstance(payload, ChildStarted):
            with self._lock:  # a child agent of a firing's turn asks as its firing does
                self._running[payload.turn_id] = firing
                self._match_unmatched()
            return
        if not isinstance(payload, ApprovalRequest):
            return
        allow = firing.spec.approval is ScheduleApproval.ALLOW
        refusal = "" if allow else refused(payload.tool, f"the schedule {firing.spec.name}")
        gateway.approval_respond(
            event.session_id, payload.request_id, "once" if allow else "deny", refusal=refusal
        )

    def _match_unmatched(self) -> None:
        """Answer the kept events whose turn is now known to be a firing's (lock held)."""
        kept = list(self._unmatched)
        self._unmatched.clear()
        for gateway, event in kept:
            payload = event.payload
            assert isinstance(payload, ChildStarted | ApprovalRequest)
            turn = payload.parent_turn_id if isinstance(payload, ChildStarted) else payload.turn_id
            firing = self._running.get(turn)
            if firing is None:
                self._unmatched.append((gateway, event))
            else:
                threading.Thread(
                    target=self._answer,
                    args=(firing, gateway, event),
                    name="desk-schedule-answer",
                    daemon=True,
                ).start()

    # -- stopping ------------------------------------------------------------------------------

    def stop(self, join_s: float = JOIN_S) -> None:
        """Claim nothing more; every firing stops its turn as the system (``gateway.shutdown``:
        a turn still queued never runs); wait (bounded) for the firings' threads, and shut down
        the gateways of other workspaces. Idempotent; the main gateway is its owner's to shut."""
        with self._lock:
            self._stopping.set()
            threads = list(self._threads)
        self._wake.set()
        if self._loop is not None:
            self._loop.join(join_s)
        end = time.monotonic() + join_s
        for thread in threads:
            thread.join(max(0.0, end - time.monotonic()))
        with self._lock:
            subs, self._subs = self._subs, []
            others = list(self._gateways.values())
            self._gateways.clear()
        for gateway, sub in subs:
            gateway.unsubscribe(sub)
        for gateway in others:
            gateway.shutdown()
