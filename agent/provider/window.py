"""The model's context window: set by the person, or learned from the server, and where from.

Where each kind of server says it (the figure the server *runs* with is preferred over the
model's training context, which a server may not have room for):

- llama.cpp: ``GET /props`` -> ``default_generation_settings.n_ctx`` (per slot, the window
  in force; older builds put ``n_ctx`` at the top level); ``GET /v1/models`` ->
  ``data[].meta.n_ctx`` (newer builds) and ``meta.n_ctx_train`` (training context).
- vLLM: ``GET /v1/models`` -> ``data[].max_model_len`` (the window the engine was started with).
- OpenRouter, LM Studio and others: ``data[].context_length`` / ``max_context_length`` in
  ``/v1/models`` (the window the provider serves).
- Ollama: ``POST /api/show`` -> ``num_ctx`` in ``parameters`` (the window the model runs with
  when its Modelfile sets one) and ``model_info["<arch>.context_length"]`` (training).

A configured window (``--context-window``, ``DESK_CONTEXT_WINDOW``, ``context_window``) wins
over all of them; with none of them desk assumes `DEFAULT_WINDOW` and says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from agent.provider.client import ProviderConfig
from agent.valid_text import loads

if TYPE_CHECKING:
    import httpx  # imported where it is used: not before desk's first frame

DEFAULT_WINDOW = 8192
"""Tokens assumed when neither the person nor the server says."""


class WindowSource(StrEnum):
    """Where a context window figure came from."""

    CONFIGURED = "configured"
    """Set by the person (flag, environment or config file)."""
    SERVER = "server"
    """The window the server runs with (llama.cpp ``n_ctx``, vLLM ``max_model_len``...)."""
    MODEL = "model"
    """The model's training context: the server may run with less."""
    ASSUMED = "assumed"
    """Nobody said: `DEFAULT_WINDOW`."""


@dataclass(frozen=True, slots=True)
class ContextWindow:
    """A context window and its source.

    Attributes:
        tokens: the window in tokens (> 0).
        source: where the figure came from.
        detail: the field it was read from, e.g. ``"/props n_ctx"`` ("" when configured or
            assumed).
    """

    tokens: int
    source: WindowSource
    detail: str = ""

    def describe(self) -> str:
        """One short phrase for a status bar, e.g. ``"window 2,048 from the server"``."""
        figure = f"{self.tokens:,}"
        if self.source is WindowSource.CONFIGURED:
            return f"window {figure} (context_window)"
        if self.source is WindowSource.SERVER:
            return f"window {figure} from the server"
        if self.source is WindowSource.MODEL:
            return f"window {figure} from the model (training context)"
        return f"{figure} assumed: set context_window"


def root_url(base_url: str) -> str:
    """The server root: the base URL without a trailing ``/v1``."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def learn_context_window(
    config: ProviderConfig,
    *,
    configured: int | None = None,
    timeout_s: float = 2.0,
) -> ContextWindow:
    """The context window for ``config``'s model.

    Args:
        config: where the server is, and the model.
        configured: the person's ``context_window``, which wins when set (> 0).
        timeout_s: bound of each request, in seconds.

    Returns:
        the window and its source: configured; else the server's running window; else the
        model's training context; else `DEFAULT_WINDOW` assumed. Never raises: a server that
        cannot be reached or answers nonsense counts as one that does not say.
    """
    if configured is not None and configured > 0:
        return ContextWindow(configured, WindowSource.CONFIGURED)
    training: ContextWindow | None = None
    for found in _asked(config, timeout_s):
        if found.source is WindowSource.SERVER:
            return found
        training = training or found
    return training or ContextWindow(DEFAULT_WINDOW, WindowSource.ASSUMED)


def _asked(config: ProviderConfig, timeout_s: float) -> Iterator[ContextWindow]:
    """Figures in the order the endpoints are asked: running windows before training ones."""
    import httpx

    from agent.provider.tls import shared_ssl_context

    root = root_url(config.base_url)
    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    try:
        client = httpx.Client(
            timeout=timeout_s, headers=headers, trust_env=False, verify=shared_ssl_context()
        )
        with client as http:
            props = _get_json(http, "GET", f"{root}/props")
            yield from _from_props(props)
            models = _get_json(http, "GET", config.base_url.rstrip("/") + "/models")
            yield from _from_models(models, config.model)
            show = _get_json(http, "POST", f"{root}/api/show", {"model": config.model})
            yield from _from_ollama(show)
    except httpx.HTTPError:
        return


def _get_json(http: httpx.Client, method: str, url: str, body: dict[str, Any] | None = None) -> Any:
    response = http.request(method, url, json=body)
    if response.status_code != 200:
        return None
    try:
        return loads(response.content)
    except ValueError:
        return None


def _positive(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if value > 0 else None


def _from_props(data: Any) -> Iterator[ContextWindow]:
    if not isinstance(data, dict):
        return
    settings = data.get("default_generation_settings")
    n_ctx = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
    if n_ctx is not None:
        yield ContextWindow(n_ctx, WindowSource.SERVER, "/props n_ctx")
    elif (top := _positive(data.get("n_ctx"))) is not None:
        yield ContextWindow(top, WindowSource.SERVER, "/props n_ctx")


_RUNNING_FIELDS = ("max_model_len", "context_length", "max_context_length", "context_window")


def _from_models(data: Any, model: str) -> Iterator[ContextWindow]:
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return
    rows = [e for e in entries if isinstance(e, dict)]
    chosen = [e for e in rows if e.get("id") == model] or (rows if len(rows) == 1 else [])
    for entry in chosen[:1]:
        found = entry.get("meta")
        meta: dict[str, Any] = found if isinstance(found, dict) else {}
        running = _positive(meta.get("n_ctx"))
        if running is not None:
            yield ContextWindow(running, WindowSource.SERVER, "/v1/models meta.n_ctx")
        for name in _RUNNING_FIELDS:
            if (value := _positive(entry.get(name))) is not None:
                yield ContextWindow(value, WindowSource.SERVER, f"/v1/models {name}")
        trained = _positive(meta.get("n_ctx_train"))
        if trained is not None:
            yield ContextWindow(trained, WindowSource.MODEL, "/v1/models meta.n_ctx_train")


_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


def _from_ollama(data: Any) -> Iterator[ContextWindow]:
    if not isinstance(data, dict):
        return
    parameters = data.get("parameters")
    if isinstance(parameters, str) and (match := _NUM_CTX.search(parameters)):
        value = int(match.group(1))
        if value > 0:
            yield ContextWindow(value, WindowSource.SERVER, "/api/show num_ctx")
    info = data.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            length = _positive(value) if str(key).endswith(".context_length") else None
            if length is not None:
                yield ContextWindow(length, WindowSource.MODEL, f"/api/show {key}")
                return
