"""``/sessions``: one line per live session, counting the turns a resumed session had."""

from __future__ import annotations

from pathlib import Path

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from contract.events import MessageComplete
from demo_model.server import DemoModelServer
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig


def test_a_resumed_session_counts_the_turns_it_had(
    demo_server: DemoModelServer, tmp_path: Path
) -> None:
    provider = ProviderConfig(base_url=demo_server.base_url, model="demo")
    first = Gateway(GatewayConfig(provider=provider), store=SqliteStore(tmp_path / "s.db"))
    session = first.session_create("counted")
    log = EventLog()
    first.subscribe(log)
    for n, word in enumerate(("one", "two"), start=1):
        first.prompt_submit(session, f"reply with exactly: {word}")
        assert log.wait_for(lambda _events, n=n: len(log.of_type(MessageComplete)) == n)
    assert first.shutdown(timeout_s=5.0).threads_left == []

    again = Gateway(GatewayConfig(provider=provider), store=SqliteStore(tmp_path / "s.db"))
    again.session_resume(session)
    (line,) = [s for s in again.session_summaries() if s.startswith(session)]
    assert "counted" in line and "2 turns, idle" in line
    assert again.shutdown(timeout_s=5.0).threads_left == []
