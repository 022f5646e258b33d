"""The demo model enforces its context window and a strict chat template as llama.cpp does."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from demo_model import DemoConfig, DemoModelServer, count_prompt_tokens, tokenize_subword
from demo_model.__main__ import build_parser
from demo_model.template import ALTERNATION_ERROR, alternation_error
from demo_model.tokens import tokenize

from .kit import chat, post_stream

TOOLS = [{"type": "function", "function": {"name": "delegate", "parameters": {}}}]
PROSE = (
    "Compression exists so that a session keeps working as it grows. Tried as a new user "
    "would, against a real server with a small context, the session got stuck after a few "
    "long prompts, and only starting a new one got out of it. "
)


def test_an_oversized_prompt_gets_llama_cpp_s_exact_body(
    demo: DemoModelServer, client: httpx.Client
) -> None:
    body = chat("word " * 30)
    tokens = count_prompt_tokens(body["messages"])
    demo.configure(n_ctx=tokens)  # llama.cpp refuses n_prompt_tokens >= n_ctx
    response = client.post("/chat/completions", json=body)
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "code": 400,
            "message": f"request ({tokens} tokens) exceeds the available context size "
            f"({tokens} tokens), try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": tokens,
            "n_ctx": tokens,
        }
    }
    record = demo.records.last()
    assert record is not None and record.outcome == "rejected" and record.prompt_tokens == tokens
    demo.configure(n_ctx=tokens + 1)
    assert client.post("/chat/completions", json=body).status_code == 200


def test_tool_definitions_count_in_the_prompt(demo: DemoModelServer, client: httpx.Client) -> None:
    bare = client.post("/chat/completions", json=chat("hi")).json()["usage"]["prompt_tokens"]
    with_tools = client.post("/chat/completions", json=chat("hi", tools=TOOLS)).json()
    expected = len(tokenize(json.dumps(TOOLS))) + 4
    assert with_tools["usage"]["prompt_tokens"] == bare + expected


def test_the_window_is_told_where_llama_cpp_tells_it(demo: DemoModelServer) -> None:
    demo.configure(n_ctx=2048, n_ctx_train=32768)
    props = httpx.get(demo.root_url + "/props").json()
    assert props["default_generation_settings"]["n_ctx"] == 2048
    assert "n_ctx" not in props  # llama.cpp has no top-level n_ctx
    model = httpx.get(demo.base_url + "/models").json()["data"][0]
    assert model["meta"]["n_ctx_train"] == 32768 and model["meta"]["n_ctx"] == 2048


def test_tokenize_counts_as_the_prompt_is_counted(
    demo: DemoModelServer, client: httpx.Client
) -> None:
    demo.configure(tokenizer="subword")
    tokens = httpx.post(demo.root_url + "/tokenize", json={"content": PROSE}).json()["tokens"]
    assert len(tokens) == len(tokenize_subword(PROSE)) and all(isinstance(t, int) for t in tokens)
    usage = client.post("/chat/completions", json=chat(PROSE)).json()["usage"]
    assert usage["prompt_tokens"] == len(tokens) + 4
    pieces = httpx.post(
        demo.root_url + "/tokenize",
        json={"content": "hi there", "with_pieces": True, "add_special": True},
    ).json()["tokens"]
    assert [p["piece"] for p in pieces] == ["<s>", "hi", " ther", "e"]
    assert httpx.post(demo.root_url + "/tokenize", json={"content": 3}).status_code == 400


@given(st.text())
def test_subword_pieces_round_trip(text: str) -> None:
    pieces = tokenize_subword(text)
    assert "".join(pieces) == text and all(pieces)


def test_subword_counts_like_a_real_vocabulary() -> None:
    prose = len(PROSE) / len(tokenize_subword(PROSE))
    code = 'def f(x: int) -> dict[str, int]:\n    return {"a": x * 2, "b": x // 3}\n'
    assert 2.5 <= prose <= 4.0  # real vocabularies: 2.5-4.5 characters a token
    assert len(code) / len(tokenize_subword(code)) < prose


def _user(text: str = "q") -> dict[str, Any]:
    return {"role": "user", "content": text}


def _assistant(text: str = "a", calls: tuple[str, ...] = ()) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": c, "type": "function", "function": {"name": "f", "arguments": "{}"}}
            for c in calls
        ]
    return message


def _tool(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "out"}


SYSTEM = {"role": "system", "content": "s"}
GOOD = [
    [_user()],
    [SYSTEM, _user(), _assistant(), _user()],
    [_user(), _assistant("", ("c1",)), _tool("c1")],
    [_user(), _assistant("", ("c1", "c2")), _tool("c2"), _tool("c1"), _assistant(), _user()],
    [_user(), _assistant("", ("c1",)), _tool("c1"), _assistant("", ("c2",)), _tool("c2")],
]
BAD = [
    [_user(), _user()],  # a stopped turn left no reply
    [_assistant(), _user()],
    [SYSTEM, _user(), SYSTEM, _user()],
    [_user(), _assistant(), _assistant()],
    [_user(), _assistant("", ("c1",)), _user()],  # a call without its result
    [_user(), _assistant("", ("c1", "c2")), _tool("c1"), _assistant()],
    [_user(), _tool("c9")],  # a result without its call
    [_user(), _assistant("", ("c1",)), _tool("c1"), _user()],  # after results, the assistant
]


@pytest.mark.parametrize("messages", GOOD)
def test_the_strict_template_takes_well_formed_requests(messages: list[dict[str, Any]]) -> None:
    assert alternation_error(messages) is None


@pytest.mark.parametrize("messages", BAD)
def test_the_strict_template_refuses_what_a_jinja_template_raises_on(
    messages: list[dict[str, Any]],
) -> None:
    assert alternation_error(messages) == ALTERNATION_ERROR


def test_a_strict_server_answers_400_quoting_the_template(
    demo: DemoModelServer, client: httpx.Client
) -> None:
    body = {"messages": [_user("one"), _user("two")]}
    assert client.post("/chat/completions", json=body).status_code == 200  # lenient by default
    demo.configure(strict_template=True)
    response = client.post("/chat/completions", json=body)
    assert response.status_code == 400
    assert response.json() == {
        "error": {"code": 400, "message": ALTERNATION_ERROR, "type": "invalid_request_error"}
    }
    assert client.post("/chat/completions", json=chat("fine")).status_code == 200


def test_one_endless_paragraph(demo: DemoModelServer, client: httpx.Client) -> None:
    demo.configure(reply_shape="paragraph", max_tokens=120)
    stream = post_stream(client, chat("tell me about anything"))
    assert stream.finish_reasons == ["length"]
    assert "\n" not in stream.content and len(tokenize(stream.content)) == 120
    exact = client.post("/chat/completions", json=chat("reply with exactly: pong")).json()
    assert exact["choices"][0]["message"]["content"] == "pong"


@pytest.mark.parametrize("shape", ["lines", "document"])
def test_endless_lines_and_documents(
    demo: DemoModelServer, client: httpx.Client, shape: str
) -> None:
    demo.configure(reply_shape=shape, max_tokens=300)
    stream = post_stream(client, chat("tell me about anything"))
    assert stream.finish_reasons == ["length"]
    assert len(tokenize(stream.content)) == 300
    if shape == "lines":  # soft breaks only: one paragraph
        assert stream.content.count("\n") >= 20 and "\n\n" not in stream.content
    else:
        assert "## Part 2" in stream.content and "```python" in stream.content


def test_flushing_each_token_streams_the_same_reply(
    demo: DemoModelServer, client: httpx.Client
) -> None:
    plain = post_stream(client, chat("same words"))
    demo.configure(flush_each_token=True)
    flushed = post_stream(client, chat("same words"))
    assert flushed.content == plain.content and len(flushed.chunks) == len(plain.chunks)


def test_a_prompt_scripts_delegate_calls(client: httpx.Client) -> None:
    prompt = "please\ndelegate: count the files\ndelegate in background: write a poem [demo tps=5]"
    reply = client.post("/chat/completions", json=chat(prompt, tools=TOOLS)).json()
    calls = reply["choices"][0]["message"]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["delegate", "delegate"]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [
        {"task": "count the files", "background": False},
        {"task": "write a poem [demo tps=5]", "background": True},
    ]
    assert reply["choices"][0]["finish_reason"] == "tool_calls"


def test_a_directive_paces_one_request(demo: DemoModelServer, client: httpx.Client) -> None:
    # the server runs at 2000 tokens/s; this request asks for 100
    client.post("/chat/completions", json=chat("slow child [demo tps=100]", max_tokens=21))
    record = demo.records.last()
    assert record is not None and record.first_token_at and record.completed_at
    # 20 intervals of 10 ms after the first token (less one: the first token is recorded just
    # after the pacer's start, and the event loop may wake a timer a clock tick early); the
    # server's own 2,000 tokens/s would take 10 ms for all of them
    assert record.completed_at - record.first_token_at >= 19 / 100.0


def test_the_command_line_sets_every_new_knob() -> None:
    args = build_parser().parse_args(
        [
            "--n-ctx-train",
            "4096",
            "--tokenizer",
            "subword",
            "--strict-template",
            "--reply-shape",
            "paragraph",
            "--flush-each-token",
        ]
    )
    assert (args.n_ctx_train, args.tokenizer, args.reply_shape) == (4096, "subword", "paragraph")
    assert args.strict_template and args.flush_each_token
    with pytest.raises(ValueError):
        DemoConfig(tokenizer="bpe")


MIXED = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": PROSE},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "delegate", "arguments": '{"task": "sum 1 2 3"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "6\nand that is all"},
    {"role": "assistant", "content": "It is 6."},
    {"role": "user", "content": "reply with exactly: thanks"},
]


@pytest.mark.parametrize("tokenizer", ["words", "subword"])
@pytest.mark.parametrize("tools", [None, TOOLS])
def test_apply_template_then_tokenize_is_the_chat_endpoint_s_own_count(
    demo: DemoModelServer, client: httpx.Client, tokenizer: str, tools: list[Any] | None
) -> None:
    demo.configure(tokenizer=tokenizer, strict_template=True)
    body: dict[str, Any] = {"messages": MIXED} | ({"tools": tools} if tools else {})
    rendered = httpx.post(demo.root_url + "/apply-template", json=body)
    assert rendered.status_code == 200
    prompt = rendered.json()["prompt"]
    counted = httpx.post(
        demo.root_url + "/tokenize", json={"content": prompt, "add_special": True}
    ).json()
    reply = client.post("/chat/completions", json={"model": "demo", **body}).json()
    # llama.cpp's count of a chat request is its template's text tokenized with the BOS
    assert len(counted["tokens"]) == reply["usage"]["prompt_tokens"] + 1


def test_apply_template_refuses_what_a_strict_template_refuses(demo: DemoModelServer) -> None:
    demo.configure(strict_template=True)
    body = {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}
    refused = httpx.post(demo.root_url + "/apply-template", json=body)
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == ALTERNATION_ERROR
    nonsense = httpx.post(demo.root_url + "/apply-template", json={"messages": "nope"})
    assert nonsense.status_code == 400
