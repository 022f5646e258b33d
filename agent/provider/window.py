"""The model's context window, asked of the server where it says.

llama.cpp answers ``GET /props`` with ``default_generation_settings.n_ctx``; Ollama answers
``POST /api/show`` with ``model_info["<architecture>.context_length"]``. OpenAI-compatible
servers in general do not say; the caller then falls back to its configuration.
"""

from __future__ import annotations

from typing import Any

import httpx

from agent.provider.client import ProviderConfig


def _root(base_url: str) -> str:
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def probe_context_window(config: ProviderConfig, timeout_s: float = 2.0) -> int | None:
    """Ask the server for the model's context window.

    Args:
        config: where the server is, and the model.
        timeout_s: bound of each request, in seconds.

    Returns:
        the window in tokens, or None when the server does not say (or cannot be reached).
    """
    root = _root(config.base_url)
    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    try:
        with httpx.Client(timeout=timeout_s, headers=headers, trust_env=False) as http:
            props = http.get(f"{root}/props")
            if props.status_code == 200:
                n_ctx = _dig(props.json(), "default_generation_settings", "n_ctx")
                if isinstance(n_ctx, int) and n_ctx > 0:
                    return n_ctx
            show = http.post(f"{root}/api/show", json={"model": config.model})
            if show.status_code == 200:
                info = show.json().get("model_info") or {}
                for key, value in info.items():
                    if key.endswith(".context_length") and isinstance(value, int) and value > 0:
                        return value
    except (httpx.HTTPError, ValueError):
        return None
    return None


def _dig(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data
