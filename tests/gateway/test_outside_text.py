"""Text from outside that is not valid Unicode is made valid where it enters, and saving goes on.

JSON may escape a lone surrogate (``"\\ud800"``), and Python reads an undecodable file name as
one (``surrogateescape``). Such a string cannot be written as UTF-8: before, the first one in a
reply, a prompt, a title or a tool's result killed the store's writer thread, and nothing was
saved after it. Here each reaches the gateway through its real entry point (the demo model's
stream, a prompt, a title, a file name listed by a tool), is shown and saved with U+FFFD in its
place, and the next turn is saved too, in a real SQLite database.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from agent.store import SqliteStore
from agent.valid_text import loads, valid_json, valid_text
from contract.events import MessageDelta, SessionCreated, StoreFailed, ToolComplete
from demo_model.server import DemoModelServer
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig

SHOWN = "\ufffd|\ufffd|\ufffd\ufffd|\U0001f600"
"""What the demo model's ``surrogate`` fault (:data:`SURROGATE_TEXT`) is shown and saved as."""


@dataclass
class Rig:
    gateway: Gateway
    log: EventLog
    db: Path
    session: str


def open_rig(provider: ProviderConfig, tmp_path: Path, **config: object) -> Rig:
    db = tmp_path / "desk.db"
    gateway = Gateway(
        GatewayConfig(
            provider=provider,
            cwd=tmp_path,
            unsaved_dir=tmp_path / "unsaved",
            approvals=False,
            **config,  # type: ignore[arg-type]
        ),
        store=SqliteStore(db),
    )
    log = EventLog()
    gateway.subscribe(log)
    return Rig(gateway, log, db, gateway.session_create())


@pytest.fixture
def rig(provider: ProviderConfig, tmp_path: Path) -> Iterator[Rig]:
    made = open_rig(provider, tmp_path)
    yield made
    made.gateway.shutdown(timeout_s=5)


def closed_cleanly(rig: Rig) -> None:
    """Shut the gateway down: nothing left unsaved, no store failure, no thread left."""
    report = rig.gateway.shutdown(timeout_s=10)
    assert report.unsaved == [] and report.threads_left == []
    assert rig.log.of_type(StoreFailed) == []


def saved(rig: Rig) -> tuple[list[str], list[str]]:
    """The session's turn statuses and message texts, as the database has them."""
    with SqliteStore(rig.db) as store:
        statuses = [t.status for t in store.turns.list_turns(rig.session)]
        texts = [m.content for m in store.transcript.load_history(rig.session)]
        assert store.turns.open_turns() == []
    return statuses, texts


def still_saving(rig: Rig) -> None:
    """A later turn is answered (the store and the wire did not die)."""
    turn = rig.gateway.prompt_submit(rig.session, "reply with exactly: saved after").turn_id
    assert rig.log.complete(turn, timeout=30).text == "saved after"


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_lone_surrogates_in_a_reply_are_shown_and_saved_as_replacement_characters(
    stream: bool, provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    rig = open_rig(provider, tmp_path, stream=stream)
    demo_server.configure(fault="surrogate", fault_after_tokens=1, fault_times=1)
    turn = rig.gateway.prompt_submit(rig.session, "reply with exactly: before after").turn_id
    done = rig.log.complete(turn, timeout=30)
    assert done.status == "completed"
    assert done.text == f"before {SHOWN}after"
    if stream:
        assert rig.log.text_of(turn) == done.text
    still_saving(rig)
    closed_cleanly(rig)
    statuses, texts = saved(rig)
    assert statuses == ["completed", "completed"]
    assert texts[1] == f"before {SHOWN}after" and texts[-1] == "saved after"


def test_a_draft_of_a_reply_with_a_lone_surrogate_is_saved(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    """The streamed text is written as a draft while it streams: the draft is valid too."""
    rig = open_rig(provider, tmp_path)
    demo_server.configure(fault="surrogate", fault_after_tokens=1, tokens_per_second=20.0)
    turn = rig.gateway.prompt_submit(rig.session, "a long markdown answer").turn_id

    def drafted() -> bool:
        with SqliteStore(rig.db, recover=False) as reader:
            row = reader.turns.get_turn(turn)
            return row is not None and SHOWN in (row.draft or "")

    assert rig.log.wait_for(lambda _e: drafted(), 30)
    rig.gateway.session_interrupt(rig.session, StopRequest.by_user(Surface.DESK_KEY))
    stopped = rig.log.complete(turn, timeout=30)
    assert SHOWN in stopped.text
    demo_server.configure(fault=None, tokens_per_second=400.0)
    still_saving(rig)
    closed_cleanly(rig)
    statuses, texts = saved(rig)
    assert statuses == ["interrupted", "completed"]
    assert texts[1] == stopped.text


@pytest.mark.parametrize(
    "text",
    ["a\ud800b", "a\udfffb", "a\ude00\ud83db", "a\udcffb"],
    ids=["high", "low", "reversed", "escaped-byte"],
)
def test_a_prompt_with_a_lone_surrogate_is_sent_shown_and_saved_as_replacement_characters(
    text: str, rig: Rig
) -> None:
    clean = valid_text(text)
    assert clean.count("\ufffd") == (2 if "\ud83d" in text else 1)
    turn = rig.gateway.prompt_submit(rig.session, f"reply with exactly: {text}").turn_id
    done = rig.log.complete(turn, timeout=30)
    assert done.text == clean  # the model got the prompt, valid
    assert rig.gateway.history(rig.session)[0].content == f"reply with exactly: {clean}"
    still_saving(rig)
    closed_cleanly(rig)
    statuses, texts = saved(rig)
    assert statuses == ["completed", "completed"]
    assert texts[:2] == [f"reply with exactly: {clean}", clean]


def test_a_title_with_a_lone_surrogate_is_shown_and_saved_as_a_replacement_character(
    rig: Rig,
) -> None:
    other = rig.gateway.session_create("new \ud800 title")
    assert rig.log.wait_for(lambda _e: any(p.title for p in rig.log.of_type(SessionCreated)))
    assert [p.title for p in rig.log.of_type(SessionCreated) if p.title] == ["new \ufffd title"]
    rig.gateway.session_rename(rig.session, "renamed \udfff")
    still_saving(rig)
    closed_cleanly(rig)
    with SqliteStore(rig.db) as store:
        titles = {s.id: s.title for s in store.sessions.list_sessions(10)}
    assert titles[other] == "new \ufffd title"
    assert titles[rig.session] == "renamed \ufffd"


def test_a_file_name_that_is_not_utf8_reaches_the_model_as_a_replacement_character(
    rig: Rig,
) -> None:
    """``list_dir`` reads names with ``surrogateescape``: the byte 0xFF is U+DCFF there."""
    folder = rig.gateway.session_cwd(rig.session) / "listed"
    folder.mkdir()
    (folder / os.fsdecode(b"name-\xff.txt")).write_bytes(b"x")
    prompt = "call tool list_dir with " + json.dumps({"path": "listed"})
    turn = rig.gateway.prompt_submit(rig.session, prompt).turn_id
    done = rig.log.complete(turn, timeout=30)
    assert done.status == "completed"
    (result,) = rig.log.of_type(ToolComplete)
    assert "name-\ufffd.txt" in result.content and not result.is_error
    still_saving(rig)
    closed_cleanly(rig)
    statuses, texts = saved(rig)
    assert statuses == ["completed", "completed"]
    assert any("name-\ufffd.txt" in t for t in texts)


def test_deltas_carry_no_surrogate(rig: Rig, demo_server: DemoModelServer) -> None:
    demo_server.configure(fault="surrogate", fault_after_tokens=0, fault_times=1)
    turn = rig.gateway.prompt_submit(rig.session, "reply with exactly: x").turn_id
    rig.log.complete(turn, timeout=30)
    pieces = [p.text for p in rig.log.of_type(MessageDelta) if p.turn_id == turn]
    assert "".join(pieces) == f"{SHOWN}x"
    assert all(p.encode("utf-8") for p in pieces)


# -- the rule itself, over every code point --------------------------------------------------

ANY_CODE_POINT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, categories=None))


@settings(deadline=None, max_examples=100)
@given(ANY_CODE_POINT)
def test_any_string_becomes_valid_utf8_and_valid_text_is_kept(text: str) -> None:
    clean = valid_text(text)
    clean.encode("utf-8")  # never raises
    if not any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        assert clean is text
    assert valid_text(clean) is clean
    lone = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    assert clean == lone


@settings(deadline=None, max_examples=100)
@given(
    st.recursive(
        ANY_CODE_POINT | st.integers(),
        lambda inner: st.lists(inner) | st.dictionaries(ANY_CODE_POINT, inner),
        max_leaves=20,
    )
)
def test_json_from_outside_is_read_with_every_string_valid(value: object) -> None:
    text = json.dumps(value)  # ASCII: every surrogate as an escape, as a server may send it
    read = loads(text)
    assert json.dumps(read, ensure_ascii=False).encode("utf-8")
    assert read == valid_json(json.loads(text))
    assert loads(text.encode("ascii")) == read


def test_json_nested_deeper_than_the_parser_follows_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="nested too deeply"):
        loads("[" * 100_000 + "]" * 100_000)


@pytest.mark.parametrize(
    ("data", "want"),
    [
        ('{"\\ud800 key": "\\udfff"}', {"\ufffd key": "\ufffd"}),  # object keys too
        (
            '{"a\\ud83d\\ude00": [["\\ud800", {"\\udc00": 1}]]}',
            {"a😀": [["\ufffd", {"\ufffd": 1}]]},
        ),
        (b'\xef\xbb\xbf{"ok": "\\ud800"}', {"ok": "\ufffd"}),  # bytes with a byte-order mark
    ],
)
def test_json_keys_nested_lists_and_a_byte_order_mark_are_read_valid(
    data: str | bytes, want: object
) -> None:
    read = loads(data)
    assert read == want
    json.dumps(read, ensure_ascii=False).encode("utf-8")  # never raises
