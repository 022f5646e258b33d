"""The server's own token count of a request: llama.cpp's ``/apply-template`` and ``/tokenize``.

llama.cpp (``tools/server``) renders a chat request with the model's own template at
``POST /apply-template`` (``{"messages", "tools"}`` -> ``{"prompt": TEXT}``) and tokenizes a
text at ``POST /tokenize`` (``{"content": TEXT, "add_special": true}`` -> ``{"tokens": [id,
...]}``): the two together give the very count the server will make of the request, template
and tool definitions included. A server with ``/tokenize`` but no ``/apply-template`` (older
llama.cpp builds) can still count the request's texts, which calibrates the estimate without
being exact. Other servers answer 404 (or something else): the caller then stops asking.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent.provider.client import ProviderConfig
from agent.provider.types import ChatMessage
from agent.provider.window import root_url
from agent.tokens import RequestSize, request_size
from agent.valid_text import loads

if TYPE_CHECKING:
    import httpx  # imported where it is used: not before desk's first frame


@dataclass(frozen=True, slots=True)
class ServerTokens:
    """The server's count of a request.

    Attributes:
        tokens: the count (tokens).
        exact: True when the server rendered the request with its own chat template and
            counted that (what it will count when the request is sent); False when it counted
            the request's texts only (the template's tokens are not in it).
        tools_left_out: the template left the tool definitions out of the prompt (llama.cpp
            without ``--jinja`` renders none): the count is of the messages alone, and a
            ratio of characters per token measured from it must leave them out too.
    """

    tokens: int
    exact: bool
    tools_left_out: bool = False

    def size(self, messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]]) -> RequestSize:
        """The size of what was counted, of the request of ``messages`` and ``tools``."""
        return request_size(messages, () if self.tools_left_out else tools)


async def _post(http: httpx.AsyncClient, url: str, body: dict[str, Any]) -> Any:
    """POST ``body``; the answer's JSON, or None for an error, a refusal or not JSON."""
    import httpx

    try:
        response = await http.post(url, json=body)
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    try:
        return loads(response.content)  # made valid Unicode where it enters
    except ValueError:
        return None


async def server_token_count(
    http: httpx.AsyncClient, config: ProviderConfig, text: str, *, add_special: bool = False
) -> int | None:
    """Ask the server how many tokens ``text`` is (``/tokenize``).

    Args:
        http: the turn's client (a stop cancels the request with the turn).
        config: where the server is.
        text: the text to count.
        add_special: count the tokens the server adds at the start of a prompt (BOS) too.

    Returns:
        the count, or None when the server does not offer ``/tokenize`` or answers nonsense.

    Raises:
        asyncio.CancelledError: when the turn is stopped meanwhile.
    """
    body: dict[str, Any] = {"content": text}
    if add_special:
        body["add_special"] = True
    data = await _post(http, root_url(config.base_url) + "/tokenize", body)
    tokens = data.get("tokens") if isinstance(data, dict) else None
    return len(tokens) if isinstance(tokens, list) else None


async def server_template_prompt(
    http: httpx.AsyncClient,
    config: ProviderConfig,
    messages: Sequence[ChatMessage],
    tools: Sequence[dict[str, Any]],
) -> str | None:
    """The prompt text the server's chat template makes of a request (``/apply-template``).

    Returns:
        the text, or None when the server does not offer ``/apply-template`` or refuses it.

    Raises:
        asyncio.CancelledError: when the turn is stopped meanwhile.
    """
    body: dict[str, Any] = {"messages": [m.to_wire() for m in messages]}
    if tools:
        body["tools"] = list(tools)
    data = await _post(http, root_url(config.base_url) + "/apply-template", body)
    prompt = data.get("prompt") if isinstance(data, dict) else None
    return prompt if isinstance(prompt, str) else None


async def server_request_count(
    http: httpx.AsyncClient,
    config: ProviderConfig,
    messages: Sequence[ChatMessage],
    tools: Sequence[dict[str, Any]],
    *,
    templates: bool = True,
) -> ServerTokens | None:
    """The server's count of the request sending ``messages`` with ``tools``.

    Args:
        http: the turn's client.
        config: where the server is.
        messages: the request's messages.
        tools: the tool definitions it offers.
        templates: try ``/apply-template`` first (False once the server said it has none).

    Returns:
        an exact count (template and tokenizer), a count of the texts only (``/tokenize``
        without ``/apply-template``), or None when the server counts nothing.

    Raises:
        asyncio.CancelledError: when the turn is stopped meanwhile.
    """
    if templates:
        prompt = await server_template_prompt(http, config, messages, tools)
        if prompt is not None:
            counted = await server_token_count(http, config, prompt, add_special=True)
            if counted is None:
                return None
            return ServerTokens(counted, exact=True, tools_left_out=not _rendered(tools, prompt))
    counted = await server_token_count(http, config, request_text(messages, tools))
    return None if counted is None else ServerTokens(counted, exact=False)


def _rendered(tools: Sequence[dict[str, Any]], prompt: str) -> bool:
    """Whether the template's ``prompt`` carries the tool definitions (each tool's name)."""
    for tool in tools:
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if isinstance(name, str) and name not in prompt:
            return False
    return True


def request_text(messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]]) -> str:
    """The text a server tokenizes for a request without its template: its messages' texts,
    tool calls and tool definitions."""
    parts = [m.content for m in messages]
    parts += [f"{c.name} {c.arguments}" for m in messages for c in m.tool_calls]
    if tools:
        parts.append(json.dumps(list(tools), separators=(",", ":")))
    return "\n".join(parts)
