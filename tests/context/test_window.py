"""desk learns the context window from every kind of server, and a configured one wins."""

from __future__ import annotations

from typing import Any

import pytest

from agent.provider.client import ProviderConfig
from agent.provider.window import (
    DEFAULT_WINDOW,
    ContextWindow,
    WindowSource,
    learn_context_window,
)
from demo_model import DemoModelServer

from .canned import canned_server


def _learn(root: str, model: str = "m", configured: int | None = None) -> ContextWindow:
    return learn_context_window(ProviderConfig(root + "/v1", model), configured=configured)


def test_llama_cpp_s_running_window_beats_its_training_context(
    demo_server: DemoModelServer,
) -> None:
    demo_server.configure(n_ctx=2048, n_ctx_train=32768)
    window = _learn(demo_server.root_url, "demo")
    assert window == ContextWindow(2048, WindowSource.SERVER, "/props n_ctx")
    assert window.describe() == "window 2,048 from the server"


def test_a_configured_window_wins(demo_server: DemoModelServer) -> None:
    window = _learn(demo_server.root_url, "demo", configured=131072)
    assert (window.tokens, window.source) == (131072, WindowSource.CONFIGURED)


VLLM = {"data": [{"id": "other", "max_model_len": 4096}, {"id": "m", "max_model_len": 32768}]}
OLLAMA = {
    "parameters": 'stop "<|eot_id|>"\nnum_ctx 16384',
    "model_info": {"general.architecture": "llama", "llama.context_length": 131072},
}
LLAMA_MODELS = {"data": [{"id": "m", "meta": {"n_ctx_train": 65536, "n_vocab": 32000}}]}


@pytest.mark.parametrize(
    ("routes", "expected"),
    [
        ({("GET", "/v1/models"): VLLM}, (32768, WindowSource.SERVER, "/v1/models max_model_len")),
        (
            {("GET", "/v1/models"): {"data": [{"id": "m", "context_length": 200000}]}},
            (200000, WindowSource.SERVER, "/v1/models context_length"),
        ),
        ({("POST", "/api/show"): OLLAMA}, (16384, WindowSource.SERVER, "/api/show num_ctx")),
        (
            {("POST", "/api/show"): {"model_info": OLLAMA["model_info"]}},
            (131072, WindowSource.MODEL, "/api/show llama.context_length"),
        ),
        (
            {("GET", "/v1/models"): LLAMA_MODELS},
            (65536, WindowSource.MODEL, "/v1/models meta.n_ctx_train"),
        ),
        (
            {("GET", "/props"): {"n_ctx": 4096}, ("GET", "/v1/models"): LLAMA_MODELS},
            (4096, WindowSource.SERVER, "/props n_ctx"),
        ),
        (
            # a training context is kept only until a running window turns up
            {("GET", "/v1/models"): LLAMA_MODELS, ("POST", "/api/show"): OLLAMA},
            (16384, WindowSource.SERVER, "/api/show num_ctx"),
        ),
    ],
)
def test_each_kind_of_server(
    routes: dict[tuple[str, str], Any], expected: tuple[int, WindowSource, str]
) -> None:
    with canned_server(routes) as root:
        window = _learn(root)
    assert (window.tokens, window.source, window.detail) == expected


def test_a_server_that_says_nothing_or_nonsense_gets_the_assumed_window() -> None:
    nonsense = {
        ("GET", "/props"): {"default_generation_settings": {"n_ctx": "big"}},
        ("GET", "/v1/models"): {"data": [{"id": "m", "max_model_len": -1}]},
        ("POST", "/api/show"): ["not", "an", "object"],
    }
    with canned_server(nonsense) as root:
        window = _learn(root)
    assert window == ContextWindow(DEFAULT_WINDOW, WindowSource.ASSUMED)
    assert window.describe() == "8,192 assumed: set context_window"
    unreachable = learn_context_window(ProviderConfig("http://127.0.0.1:9/v1", "m"))
    assert unreachable.source is WindowSource.ASSUMED
