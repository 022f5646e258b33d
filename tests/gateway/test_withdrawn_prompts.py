"""A prompt that got no reply stays out of what the model is sent next.

The person who stops a prompt before the model said anything (``one⏎ Esc two⏎``), or whose
prompt failed before any reply (the server unreachable, an error), asks the next prompt alone:
the model must not be sent the stopped or failed one with it, live or after ``--resume``. A
prompt the model began to answer stays in the history, partial reply and all.
"""

from __future__ import annotations

from pathlib import Path

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from agent.store import SqliteStore
from contract.events import MessageDelta
from demo_model.server import DemoModelServer
from tests.gateway.test_queued_prompts import hang_first_request, open_gateway


def sent_texts(demo_server: DemoModelServer) -> list[str]:
    """The message texts of the last request the model server got."""
    return [str(m.get("content") or "") for m in demo_server.records.last().messages]


def test_a_prompt_stopped_before_any_reply_is_not_sent_with_the_next_live_or_resumed(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    gateway, log = open_gateway(provider, SqliteStore(db))
    try:
        session = gateway.session_create()
        hang_first_request(demo_server)  # no token comes: the person stops it
        stopped = gateway.prompt_submit(session, "reply with exactly: ONE").turn_id
        assert demo_server.records.wait_for(lambda rs: any(r.fault for r in rs), 10)
        assert gateway.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY))
        assert log.complete(stopped).status == "interrupted"
        turn = gateway.prompt_submit(session, "reply with exactly: TWO").turn_id
        done = log.complete(turn)
        assert (done.status, done.text) == ("completed", "TWO")
        assert not any("ONE" in text for text in sent_texts(demo_server))
        assert sent_texts(demo_server)[-1] == "reply with exactly: TWO"
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []
    again, log2 = open_gateway(provider, SqliteStore(db))
    try:
        resumed = again.session_resume(session)
        texts = [e.content for e in resumed.transcript if e.role == "user"]
        assert texts == ["reply with exactly: ONE", "reply with exactly: TWO"]  # still shown
        turn = again.prompt_submit(session, "reply with exactly: THREE").turn_id
        assert log2.complete(turn).text == "THREE"
        sent = sent_texts(demo_server)
        assert not any("ONE" in text for text in sent)
        assert "reply with exactly: TWO" in sent and sent[-1] == "reply with exactly: THREE"
    finally:
        assert again.shutdown(timeout_s=10).threads_left == []


def test_a_prompt_that_failed_before_any_reply_is_not_sent_with_the_next(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    gateway, log = open_gateway(provider, SqliteStore(tmp_path / "desk.db"))
    try:
        session = gateway.session_create()
        demo_server.configure(fault="http:500")  # every try of it fails
        failed = gateway.prompt_submit(session, "reply with exactly: FAILED").turn_id
        assert log.complete(failed, 30).status == "failed"
        demo_server.configure(fault=None)
        turn = gateway.prompt_submit(session, "reply with exactly: NEW").turn_id
        assert log.complete(turn).text == "NEW"
        assert not any("FAILED" in text for text in sent_texts(demo_server))
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []


def test_a_prompt_stopped_after_the_model_began_its_reply_stays_in_the_history(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    gateway, log = open_gateway(provider, SqliteStore(tmp_path / "desk.db"))
    try:
        session = gateway.session_create()
        demo_server.configure(tokens_per_second=20.0, reply_shape="paragraph", max_tokens=4000)
        stopped = gateway.prompt_submit(session, "tell me a long story").turn_id
        assert log.wait_for(lambda _e: bool(log.of_type(MessageDelta)), 10)
        assert gateway.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY))
        partial = log.complete(stopped)
        assert partial.status == "interrupted" and partial.text
        demo_server.configure(tokens_per_second=0, reply_shape="markdown", max_tokens=400)
        turn = gateway.prompt_submit(session, "reply with exactly: next").turn_id
        assert log.complete(turn).text == "next"
        sent = sent_texts(demo_server)
        assert "tell me a long story" in sent
        assert sent[-1] == "reply with exactly: next"
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []
