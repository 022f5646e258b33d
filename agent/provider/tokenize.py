"""The server's own token count of a text: llama.cpp's ``POST /tokenize``.

``{"content": TEXT}`` -> ``{"tokens": [id, ...]}`` (``tools/server`` of llama.cpp). Other
servers answer 404 (or something else): the caller then stops asking.
"""

from __future__ import annotations

from typing import Any

import httpx

from agent.provider.client import ProviderConfig
from agent.provider.window import root_url
from agent.valid_text import loads


async def server_token_count(
    http: httpx.AsyncClient, config: ProviderConfig, text: str
) -> int | None:
    """Ask the server how many tokens ``text`` is.

    Args:
        http: the turn's client (a stop cancels the request with the turn).
        config: where the server is.
        text: the text to count.

    Returns:
        the count, or None when the server does not offer ``/tokenize`` or answers nonsense.

    Raises:
        asyncio.CancelledError: when the turn is stopped meanwhile.
    """
    try:
        response = await http.post(root_url(config.base_url) + "/tokenize", json={"content": text})
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    try:
        data: Any = loads(response.content)
    except ValueError:
        return None
    tokens = data.get("tokens") if isinstance(data, dict) else None
    return len(tokens) if isinstance(tokens, list) else None
