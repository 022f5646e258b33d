"""``/compress`` asked by the person in a session well below its threshold: it summarises what
lies between the first exchange and the last one when that makes the context smaller, and
otherwise says why there is nothing to compress, in words. Through the gateway, against the
demo model."""

from __future__ import annotations

from pathlib import Path

from agent.compression.plan import SUMMARY_MARKER
from agent.provider.client import ProviderConfig
from agent.provider.types import ChatMessage
from tests.compression.kit import long_transcript
from tests.compression.test_gateway_compression import Desk

WINDOW = 8000
"""Three long exchanges fill about 36 % of it; the usual plan's tail swallows them all."""


def test_three_long_exchanges_are_compressed_keeping_the_first_and_the_last(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    desk = Desk(provider, tmp_path / "desk.db", exchanges=3, context_window=WINDOW)
    try:
        before = desk.gateway.history(desk.session)
        done = desk.outcome(desk.compress())
        assert done.status == "committed", done.message
        assert done.after_tokens < done.before_tokens
        after = desk.gateway.history(desk.session)
        assert after[:3] == before[:3]  # the system prompt and the first exchange
        assert after[-2:] == before[-2:]  # the last exchange, whole
        summaries = [m for m in after if m.content.startswith(SUMMARY_MARKER)]
        assert len(summaries) == 1 and len(after) < len(before)
        turn = desk.gateway.prompt_submit(desk.session, "reply with exactly: on we go").turn_id
        assert desk.log.complete(turn).text == "on we go"
    finally:
        assert desk.gateway.shutdown(timeout_s=10).threads_left == []


def test_many_short_exchanges_are_compressed_when_asked(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    desk = Desk(provider, tmp_path / "desk.db", exchanges=0, context_window=64_000)
    try:
        talk = [ChatMessage("system", "You are a careful assistant.")]
        for i in range(17):  # 35 messages, a few per cent of the window
            talk.append(ChatMessage("user", f"question {i}: " + "why " * 40))
            talk.append(ChatMessage("assistant", f"answer {i}: " + "because " * 40))
        session = desk.store.sessions.create_session(title="chat", model="demo", messages=talk)
        desk.session = desk.gateway.session_resume(session.id).session_id
        done = desk.outcome(desk.compress())
        assert done.status == "committed", done.message
        assert done.after_tokens < done.before_tokens
        assert desk.gateway.history(desk.session)[-2:] == talk[-2:]
    finally:
        assert desk.gateway.shutdown(timeout_s=10).threads_left == []


def test_two_exchanges_say_why_there_is_nothing_to_compress(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    desk = Desk(provider, tmp_path / "desk.db", exchanges=2, context_window=WINDOW)
    try:
        before = desk.gateway.history(desk.session)
        done = desk.outcome(desk.compress())
        assert done.status == "nothing"
        assert done.message == (
            "nothing to compress: the first exchange and the last exchange are kept whole, "
            "and there is nothing older between them"
        )
        assert desk.gateway.history(desk.session) == before
    finally:
        assert desk.gateway.shutdown(timeout_s=10).threads_left == []


def test_one_exchange_says_it_is_kept_whole(provider: ProviderConfig, tmp_path: Path) -> None:
    desk = Desk(provider, tmp_path / "desk.db", exchanges=1, context_window=WINDOW)
    try:
        done = desk.outcome(desk.compress())
        assert done.status == "nothing"
        assert done.message == (
            "nothing to compress: the session has one exchange so far, and the last exchange "
            "is always kept whole"
        )
    finally:
        assert desk.gateway.shutdown(timeout_s=10).threads_left == []


def test_a_few_messages_between_say_how_little_there_is() -> None:
    from agent.compression.manual import nothing_reason
    from agent.compression.plan import plan_compression

    talk = long_transcript(4)
    usual = plan_compression(talk, window_tokens=40_000, min_tail_messages=4, tail_fraction=0.0)
    assert usual.empty and usual.tail_start - usual.head_end == 1
    assert nothing_reason(talk, usual) == (
        "nothing to compress: the first exchange and the last 2 exchanges are kept whole, and "
        f"between them there is only 1 message of about {usual.tokens_in:,} tokens, too "
        "little for a summary to save"
    )


def test_only_a_summary_before_the_last_exchange_says_it_in_one_sentence() -> None:
    from agent.compression.manual import nothing_reason
    from agent.compression.plan import SUMMARY_MARKER, plan_compression

    talk = [
        ChatMessage("system", "You are a careful assistant."),
        ChatMessage("user", SUMMARY_MARKER + " the earlier conversation, in short"),
        ChatMessage("user", "what next?"),
        ChatMessage("assistant", "this"),
    ]
    usual = plan_compression(talk, window_tokens=40_000, min_tail_messages=4, tail_fraction=0.0)
    assert nothing_reason(talk, usual) == (
        "nothing to compress: the last exchange is kept whole, and before it there is only the "
        "summary an earlier compression wrote"
    )
