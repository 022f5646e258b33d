"""Two ``desk serve`` processes on one PostgreSQL database: a run started on host A and stopped
through host B is stopped where it runs and booked once with B's stop; host A killed with
SIGKILL mid-turn has its turn recovered by host B, draft kept, and a late write of A's fencing
number is refused."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent.provider.client import ProviderConfig
from agent.store import CRASH_EXIT_REASON, StoreFenced, TurnOutcome
from agent.store.postgres import PostgresStore
from demo_model.server import DemoModelServer
from tests.support import cut_short, poll_until
from tests.wire.kit import Child, slow_reply, wire_cmd


class Served:
    """One ``desk serve`` child and how to reach it."""

    def __init__(self, provider: ProviderConfig, db: str, token_file: Path) -> None:
        self.child = Child(
            wire_cmd("serve", provider, "--port", "0", "--token-file", str(token_file), "--db", db)
        )
        assert self.child.out.wait_for(lambda d: b"listening on" in d, 30.0), self.child.err.text
        found = re.search(r"listening on (http://\S+)", self.child.out.text)
        assert found is not None
        self.base = found.group(1)
        self.headers = {"Authorization": f"Bearer {token_file.read_text().strip()}"}

    def post(self, path: str, body: object = None) -> httpx.Response:
        return httpx.post(self.base + path, headers=self.headers, json=body, timeout=30)


class Run:
    """A run streamed on a thread: its run id, its events, and whether it streams yet."""

    def __init__(self, host: Served, session: str, prompt: str) -> None:
        self.events: list[dict[str, object]] = []
        self.run_id = ""
        self.accepted = threading.Event()
        self.streaming = threading.Event()
        self.ended = threading.Event()
        url = f"{host.base}/v1/sessions/{session}/runs"

        def read() -> None:
            try:
                with httpx.stream(
                    "POST", url, headers=host.headers, json={"prompt": prompt}, timeout=60
                ) as response:
                    self.run_id = response.headers["x-desk-run-id"]
                    self.accepted.set()
                    for line in response.iter_lines():
                        if line.startswith("data: "):
                            self.events.append(json.loads(line.removeprefix("data: ")))
                        if line == "event: message.delta":
                            self.streaming.set()
            except httpx.HTTPError:
                pass  # the host was killed mid-stream
            finally:
                self.ended.set()

        self.thread = threading.Thread(target=read, daemon=True)
        self.thread.start()


@pytest.fixture
def two_hosts(
    provider: ProviderConfig, pg_database: str, tmp_path: Path
) -> Iterator[tuple[Served, Served]]:
    token_file = tmp_path / "token"
    a = Served(provider, pg_database, token_file)
    try:
        b = Served(provider, pg_database, token_file)
    except BaseException:
        a.child.kill()
        raise
    try:
        yield a, b
    finally:
        for host in (a, b):
            if host.child.proc.poll() is None:
                host.child.proc.send_signal(signal.SIGTERM)
                host.child.wait(20)
            host.child.kill()


def wait_until(check: object, timeout_s: float = 30.0) -> bool:
    assert callable(check)
    return poll_until(check, timeout_s, every_s=0.05)


def test_a_run_on_host_a_stopped_through_host_b_then_host_a_killed(
    two_hosts: tuple[Served, Served],
    demo_server: DemoModelServer,
    pg_database: str,
) -> None:
    a, b = two_hosts
    slow_reply(demo_server, 40.0)
    session = a.post("/v1/sessions").json()["session_id"]
    run = Run(a, session, "tell me a long story")
    assert run.streaming.wait(30)
    answer = b.post(f"/v1/runs/{run.run_id}/stop", {"reason": "stopped through host B"})
    assert answer.status_code == 200 and answer.json() == {"run_id": run.run_id, "stopped": True}
    cut_short(demo_server)  # host A's model connection closed, cutting the reply short
    assert run.ended.wait(30)
    completes = [e for e in run.events if e.get("type") == "message.complete"]
    assert len(completes) == 1
    payload = completes[0]["payload"]
    assert isinstance(payload, dict) and payload["exit_reason"] == "interrupted_by_user"
    assert payload["stop"]["surface"] == "api.stop"
    assert payload["stop"]["reason"] == "stopped through host B"
    reader = PostgresStore(pg_database, owner="test-reader:0:0", recover=False)
    try:
        row = reader.turns.get_turn(run.run_id)
        assert row is not None
        assert (row.exit_reason, row.stop_issuer, row.stop_surface, row.stop_reason) == (
            "interrupted_by_user",
            "user",
            "api.stop",
            "stopped through host B",
        )
        # kill -9 host A mid-turn: host B recovers the turn, draft kept, within A's lease bound.
        second = Run(a, session, "tell me another long story")
        assert second.streaming.wait(30)
        assert wait_until(lambda: bool(reader.turns.get_turn(second.run_id).draft))  # type: ignore[union-attr]
        turn = reader.turns.get_turn(second.run_id)
        assert turn is not None and turn.is_open
        owner, fence = turn.owner, reader.turns.fence_of(second.run_id)
        os.kill(a.child.proc.pid, signal.SIGKILL)
        assert wait_until(lambda: not reader.turns.get_turn(second.run_id).is_open)  # type: ignore[union-attr]
        recovered = reader.turns.get_turn(second.run_id)
        assert recovered is not None and recovered.exit_reason == CRASH_EXIT_REASON
        last = reader.transcript.all_messages(session)[-1]
        assert (last.role, last.partial, last.turn_id) == ("assistant", True, second.run_id)
        seen = "".join(
            str(e["payload"]["text"])  # type: ignore[index]
            for e in second.events
            if e.get("type") == "message.delta"
        )
        # The draft and what the client had read agree (either may be a few deltas ahead:
        # host A saved text its client had not read yet when it was killed, or the reverse).
        assert last.content and (last.content.startswith(seen) or seen.startswith(last.content))
        # The killed host's fencing number, written late (as a host only cut off would): refused.
        late = PostgresStore(pg_database, owner=owner, recover=False)
        try:
            assert fence is not None
            late.claims.adopt(session, fence)
            with pytest.raises(StoreFenced):
                late.turns.record_turn_end(
                    second.run_id, [], TurnOutcome(status="completed", exit_reason="completed")
                )
        finally:
            late.close()
        assert reader.turns.get_turn(second.run_id).exit_reason == CRASH_EXIT_REASON  # type: ignore[union-attr]
        # Host B may now take the session (it is not live anywhere else).
        resumed = httpx.post(
            b.base + "/v1/rpc",
            headers=b.headers,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "session.resume",
                "params": {"session_id": session},
            },
            timeout=30,
        ).json()
        assert resumed["result"]["session_id"] == session
    finally:
        reader.close()
