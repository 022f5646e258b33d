"""What desk asks the model server once at start: its context window and its models.

The context window comes from llama.cpp's (and the demo model's) ``GET {root}/props``
(``default_generation_settings.n_ctx``, where ``root`` is the base URL without ``/v1``);
servers without that endpoint (Ollama, vLLM, OpenAI) get :data:`DEFAULT_N_CTX`. The models come
from ``GET {base_url}/models``. :func:`fetch_in_background` does both on a daemon thread of its
own (never the UI thread, never a Textual worker that would hold up quitting) and hands the
result to a callback.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

DEFAULT_N_CTX = 8192
"""Context window assumed when the server does not say (tokens)."""

FETCH_TIMEOUT_S = 2.0
"""Time for each request, in seconds."""


@dataclass(frozen=True, slots=True)
class ServerFacts:
    """What the server told.

    Attributes:
        n_ctx: the context window in tokens.
        n_ctx_known: True when the server reported it (else :data:`DEFAULT_N_CTX`).
        models: model ids the server lists, in its order (empty when unknown).
    """

    n_ctx: int = DEFAULT_N_CTX
    n_ctx_known: bool = False
    models: tuple[str, ...] = field(default_factory=tuple)


def server_root(base_url: str) -> str:
    """The base URL without a trailing ``/v1`` (where llama.cpp serves ``/props``)."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def _n_ctx(data: object) -> int | None:
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    value = settings.get("n_ctx") if isinstance(settings, dict) else data.get("n_ctx")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _models(data: object) -> tuple[str, ...]:
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return ()
    return tuple(
        item["id"] for item in items if isinstance(item, dict) and isinstance(item.get("id"), str)
    )


def _get_json(client: httpx.Client, url: str) -> object:
    try:
        response = client.get(url)
        if response.status_code != 200:
            return None
        return response.json()
    except (httpx.HTTPError, ValueError):
        return None


def fetch_server_facts(
    base_url: str, *, api_key: str | None = None, timeout_s: float = FETCH_TIMEOUT_S
) -> ServerFacts:
    """Ask the server (blocking; at most two requests of ``timeout_s`` each). Never raises.

    Args:
        base_url: the server root ending in ``/v1``.
        api_key: sent as a bearer token when given.
        timeout_s: the bound of each request, in seconds.

    Returns:
        the facts; defaults for whatever the server did not answer.
    """
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with httpx.Client(headers=headers, timeout=timeout_s, trust_env=False) as client:
            n_ctx = _n_ctx(_get_json(client, server_root(base_url) + "/props"))
            models = _models(_get_json(client, base_url.rstrip("/") + "/models"))
    except Exception:  # a broken proxy setting, an odd URL: the defaults are fine
        return ServerFacts()
    return ServerFacts(n_ctx or DEFAULT_N_CTX, n_ctx is not None, models)


def api_key_of(gateway: object) -> str | None:
    """The API key an embedded gateway talks to the model server with, if it has one."""
    provider = getattr(getattr(gateway, "config", None), "provider", None)
    api_key = getattr(provider, "api_key", None)
    return api_key if isinstance(api_key, str) else None


def fetch_in_background(
    base_url: str,
    deliver: Callable[[ServerFacts], object],
    *,
    api_key: str | None = None,
    timeout_s: float = FETCH_TIMEOUT_S,
) -> threading.Thread:
    """Run :func:`fetch_server_facts` on a daemon thread named ``desk-server-facts``.

    Args:
        base_url: the server root ending in ``/v1``.
        deliver: called on that thread with the facts (use a thread-safe ``post_message``).
        api_key: sent as a bearer token when given.
        timeout_s: the bound of each request, in seconds.

    Returns:
        the started thread.
    """

    def run() -> None:
        facts = fetch_server_facts(base_url, api_key=api_key, timeout_s=timeout_s)
        try:
            deliver(facts)
        except Exception:  # the app has closed: nobody wants the answer any more
            return

    thread = threading.Thread(target=run, name="desk-server-facts", daemon=True)
    thread.start()
    return thread
