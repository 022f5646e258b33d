"""The demo server speaks the OpenAI chat-completions protocol the way llama.cpp does."""

from __future__ import annotations

import json

import httpx

from demo_model import DemoModelServer, reasoning_for, reply_for, tokenize, tool_calls_for
from tests.demo_model.kit import chat, post_stream

TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]


def test_streamed_text_is_exactly_the_predicted_reply(
    demo: DemoModelServer, client: httpx.Client
) -> None:
    body = chat("Explain closures in Python")
    stream = post_stream(client, body)
    assert stream.status == 200
    assert stream.headers["content-type"].startswith("text/event-stream")
    assert stream.content == reply_for(body["messages"])
    assert stream.done and stream.lines[-1] == "data: [DONE]"
    first = stream.chunks[0]
    assert first["object"] == "chat.completion.chunk"
    assert first["id"].startswith("chatcmpl-") and isinstance(first["created"], int)
    assert first["model"] == "demo"
    assert first["choices"][0]["delta"]["role"] == "assistant"
    assert all(c["id"] == first["id"] for c in stream.chunks)
    # one token per chunk, then a chunk with only the finish reason
    assert len(stream.chunks) == len(tokenize(stream.content)) + 1
    assert stream.chunks[-1]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop"}
    assert stream.usages == []  # not asked for
    record = demo.records.last()
    assert record is not None and record.outcome == "completed"
    assert record.text == stream.content and record.finish_reason == "stop"
    assert record.messages == body["messages"]


def test_non_streaming_reply_is_the_same_text(demo: DemoModelServer, client: httpx.Client) -> None:
    body = chat("Explain closures in Python")
    response = client.post("/chat/completions", json=body)
    assert response.status_code == 200
    data = response.json()
    assert data["object"] == "chat.completion"
    choice = data["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": reply_for(body["messages"])}
    assert choice["finish_reason"] == "stop"
    tokens = len(tokenize(choice["message"]["content"]))
    usage = data["usage"]
    assert usage["completion_tokens"] == tokens
    assert usage["total_tokens"] == usage["prompt_tokens"] + tokens
    record = demo.records.last()
    assert record is not None and not record.stream
    assert record.headers_sent_at is not None and record.first_token_at is not None
    assert record.headers_sent_at >= record.first_token_at  # headers only after generation


def test_usage_in_a_final_chunk_when_asked(client: httpx.Client) -> None:
    stream = post_stream(client, chat("hi", stream_options={"include_usage": True}))
    [(index, usage)] = stream.usages
    assert index == len(stream.chunks) - 1
    assert stream.chunks[-1]["choices"] == []
    assert stream.chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert usage["completion_tokens"] == len(tokenize(stream.content))
    assert usage["prompt_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_usage_on_the_finish_chunk_with_the_knob(
    demo: DemoModelServer, client: httpx.Client
) -> None:
    demo.configure(usage_on_finish_chunk=True)
    stream = post_stream(client, chat("hi", stream_options={"include_usage": True}))
    [(index, usage)] = stream.usages
    assert index == len(stream.chunks) - 1
    assert stream.chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert usage["completion_tokens"] == len(tokenize(stream.content))


def test_max_tokens_cuts_the_reply_with_length(client: httpx.Client) -> None:
    body = chat("hi", max_tokens=7, stream_options={"include_usage": True})
    stream = post_stream(client, body)
    assert stream.content == "".join(tokenize(reply_for(body["messages"]))[:7])
    assert stream.finish_reasons == ["length"]
    assert stream.usages[0][1]["completion_tokens"] == 7
    data = client.post("/chat/completions", json=chat("hi", max_completion_tokens=3)).json()
    assert data["choices"][0]["finish_reason"] == "length"
    assert data["usage"]["completion_tokens"] == 3


def test_server_max_tokens_knob_caps_too(demo: DemoModelServer, client: httpx.Client) -> None:
    demo.configure(max_tokens=4)
    data = client.post("/chat/completions", json=chat("hi", max_tokens=100)).json()
    assert data["usage"]["completion_tokens"] == 4
    assert data["choices"][0]["finish_reason"] == "length"


def test_tool_call_streams_as_deltas(client: httpx.Client) -> None:
    body = chat('call tool read_file with {"path": "notes.md"}', tools=TOOLS)
    stream = post_stream(client, body)
    [call] = tool_calls_for(body["messages"], tools=TOOLS)
    tool_deltas = [d["tool_calls"][0] for d in stream.deltas if "tool_calls" in d]
    assert tool_deltas[0] == {
        "index": 0,
        "id": call.id,
        "type": "function",
        "function": {"name": "read_file", "arguments": ""},
    }
    pieces = [d["function"]["arguments"] for d in tool_deltas[1:]]
    assert 2 <= len(pieces) <= 3
    assert all(set(d) == {"index", "function"} for d in tool_deltas[1:])
    assert json.loads("".join(pieces)) == {"path": "notes.md"}
    assert stream.content == ""
    assert stream.finish_reasons == ["tool_calls"]
    assert stream.deltas[0]["role"] == "assistant"


def test_tool_call_without_streaming_and_the_result_round(client: httpx.Client) -> None:
    messages = [{"role": "user", "content": 'call tool read_file with {"path": "x"}'}]
    data = client.post("/chat/completions", json={"messages": messages, "tools": TOOLS}).json()
    choice = data["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    [call] = choice["message"]["tool_calls"]
    assert call["type"] == "function"
    assert call["function"] == {"name": "read_file", "arguments": '{"path": "x"}'}
    messages += [
        choice["message"],
        {"role": "tool", "tool_call_id": call["id"], "content": "line one\nline two"},
    ]
    stream = post_stream(client, {"messages": messages, "tools": TOOLS})
    assert "> line one" in stream.content and "line two" not in stream.content
    assert stream.content == reply_for(messages, tools=TOOLS)
    assert stream.finish_reasons == ["stop"]


def test_tool_choice_none_gives_text(client: httpx.Client) -> None:
    body = chat("call tool read_file with {}", tools=TOOLS, tool_choice="none")
    stream = post_stream(client, body)
    assert stream.content == reply_for(body["messages"])
    assert stream.finish_reasons == ["stop"]


def test_reasoning_comes_before_content(demo: DemoModelServer, client: httpx.Client) -> None:
    demo.configure(reasoning=True)
    body = chat("why is the sky blue")
    stream = post_stream(client, body)
    assert stream.reasoning == reasoning_for(body["messages"])
    assert stream.content == reply_for(body["messages"])
    kinds = ["reasoning" if "reasoning_content" in d else "content" for d in stream.deltas[:-1]]
    assert kinds == sorted(kinds, key=lambda k: k != "reasoning")  # all reasoning first
    data = client.post("/chat/completions", json=body).json()
    message = data["choices"][0]["message"]
    assert message["reasoning_content"] == stream.reasoning
    assert message["content"] == stream.content


def test_per_request_knobs(client: httpx.Client) -> None:
    stream = post_stream(client, chat("hi", demo={"max_tokens": 2, "reasoning": True}))
    assert stream.finish_reasons == ["length"] and stream.content == ""
    refused = client.post("/chat/completions", json=chat("hi", demo={"slots": 4}))
    assert refused.status_code == 400


def test_model_names(demo: DemoModelServer, client: httpx.Client) -> None:
    assert client.post("/chat/completions", json=chat("hi", model="other")).status_code == 200
    demo.configure(strict_model=True)
    response = client.post("/chat/completions", json=chat("hi", model="other"))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "model_not_found"
    assert client.post("/chat/completions", json=chat("hi", model="demo")).status_code == 200
    models = client.get("/models").json()
    assert models["object"] == "list"
    assert [m["id"] for m in models["data"]] == ["demo"]


def test_bad_requests_get_400(demo: DemoModelServer, client: httpx.Client) -> None:
    response = client.post(
        "/chat/completions", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert "message" in response.json()["error"]
    assert client.post("/chat/completions", json={"messages": []}).status_code == 400
    assert client.post("/chat/completions", json=chat("x", max_tokens=0)).status_code == 400
    assert client.get("/chat/completions").status_code == 405
    assert client.get("/nowhere").status_code == 404
    record = demo.records.list()[0]
    assert record.outcome == "rejected" and record.status == 400


def test_prompt_longer_than_the_context_is_refused(
    demo: DemoModelServer, client: httpx.Client
) -> None:
    demo.configure(n_ctx=20)
    response = client.post("/chat/completions", json=chat("word " * 30))
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "exceed_context_size_error"
    # prompt 4 + 1 tokens leaves 15 for the reply
    data = client.post("/chat/completions", json=chat("hi")).json()
    assert data["usage"]["completion_tokens"] == 15
    assert data["choices"][0]["finish_reason"] == "length"


def test_api_key(demo: DemoModelServer, client: httpx.Client) -> None:
    demo.configure(api_key="sekrit")
    response = client.post("/chat/completions", json=chat("hi"))
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"
    wrong = {"Authorization": "Bearer nope"}
    assert client.post("/chat/completions", json=chat("hi"), headers=wrong).status_code == 401
    assert client.get("/models").status_code == 401
    right = {"Authorization": "Bearer sekrit"}
    assert client.post("/chat/completions", json=chat("hi"), headers=right).status_code == 200
    assert client.get("/models", headers=right).status_code == 200
    assert httpx.get(demo.root_url + "/health").status_code == 200


def test_llama_cpp_endpoints(demo: DemoModelServer) -> None:
    demo.configure(slots=2, n_ctx=4096)
    assert httpx.get(demo.root_url + "/health").json() == {"status": "ok"}
    slots = httpx.get(demo.root_url + "/slots").json()
    assert [(s["id"], s["is_processing"]) for s in slots] == [(0, False), (1, False)]
    props = httpx.get(demo.root_url + "/props").json()
    assert props["default_generation_settings"]["n_ctx"] == 4096
    assert props["total_slots"] == 2


def test_control_endpoints(demo: DemoModelServer, client: httpx.Client) -> None:
    root = demo.root_url
    changed = httpx.post(root + "/demo/config", json={"tokens_per_second": 1500, "slots": 2})
    assert changed.status_code == 200 and changed.json()["slots"] == 2
    assert demo.config.tokens_per_second == 1500.0
    assert httpx.post(root + "/demo/config", json={"slots": 0}).status_code == 400
    assert httpx.post(root + "/demo/config", json={"bogus": 1}).status_code == 400
    assert httpx.get(root + "/demo/config").json()["slots"] == 2
    client.post("/chat/completions", json=chat("one", max_tokens=1))
    client.post("/chat/completions", json=chat("two", max_tokens=1))
    requests = httpx.get(root + "/demo/requests").json()["requests"]
    assert [r["messages"][0]["content"] for r in requests] == ["one", "two"]
    assert requests[0]["outcome"] == "completed" and requests[0]["tokens_generated"] == 1
    later = httpx.get(root + "/demo/requests", params={"since": requests[0]["id"]}).json()
    assert [r["id"] for r in later["requests"]] == [requests[1]["id"]]
    assert httpx.post(root + "/demo/reset").status_code == 200
    assert httpx.get(root + "/demo/requests").json() == {"requests": []}
    httpx.post(root + "/demo/reset", json={"config": True})
    assert demo.config.slots == 1 and demo.config.tokens_per_second == 2000.0


def test_pace_follows_tokens_per_second(demo: DemoModelServer, client: httpx.Client) -> None:
    demo.configure(tokens_per_second=200.0)
    client.post("/chat/completions", json=chat("hi", max_tokens=41))
    record = demo.records.last()
    assert record is not None and record.first_token_at and record.completed_at
    assert record.completed_at - record.first_token_at >= 40 / 200.0


def test_prompt_delay_holds_back_the_headers(demo: DemoModelServer, client: httpx.Client) -> None:
    demo.configure(prompt_delay_s=0.2)
    with client.stream("POST", "/chat/completions", json=chat("hi", stream=True)) as response:
        record = demo.records.last()
        assert record is not None and record.slot_acquired_at and record.headers_sent_at
        assert record.headers_sent_at - record.slot_acquired_at >= 0.2
        response.read()
