"""Asks OpenAI-compatible servers for their models, concurrently and within a time budget.

Used at start-up, when nothing is configured, to find a local llama.cpp or Ollama server at its
default address (a configured server is the gateway's to check, see
:mod:`tui_gateway.servers.model_server`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx  # imported where it is used: not before desk's first frame

LOCAL_SERVERS: tuple[tuple[str, str], ...] = (
    ("llama.cpp", "http://127.0.0.1:8080/v1"),
    ("Ollama", "http://127.0.0.1:11434/v1"),
)
"""(name, base URL) of the local servers probed when nothing is configured, in preference order."""


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What ``GET <base_url>/models`` gave.

    Attributes:
        base_url: the server root probed (ending in ``/v1``).
        status: the HTTP status, or None when no HTTP answer came (refused, timed out).
        models: model ids listed, in the server's order (empty when none or unreadable).
        error: one line saying why the server did not answer, or None when it did.
    """

    base_url: str
    status: int | None = None
    models: tuple[str, ...] = field(default_factory=tuple)
    error: str | None = None

    @property
    def answered(self) -> bool:
        """True when the server sent any HTTP answer."""
        return self.status is not None

    @property
    def usable(self) -> bool:
        """True when the server answered 200 with at least one model."""
        return self.status == 200 and bool(self.models)


def models_url(base_url: str) -> str:
    """``<base_url>/models``."""
    return base_url.rstrip("/") + "/models"


def _model_ids(data: object) -> tuple[str, ...]:
    # imported here: the model-server module loads the gateway's session state, which the
    # first frame does not wait for (a probe runs in the background, or before the app only
    # when nothing is configured)
    from tui_gateway.servers.model_server import listed_models

    return tuple(listed_models(data))


async def _probe_one(client: httpx.AsyncClient, base_url: str) -> ProbeResult:
    import httpx

    try:
        response = await client.get(models_url(base_url))
    except httpx.ConnectError:
        return ProbeResult(base_url, error="connection refused")
    except httpx.TimeoutException:
        return ProbeResult(base_url, error="no answer in time")
    except httpx.HTTPError as exc:
        return ProbeResult(base_url, error=" ".join(str(exc).split()) or type(exc).__name__)
    try:
        models = _model_ids(response.json())
    except ValueError:
        models = ()
    return ProbeResult(base_url, status=response.status_code, models=models)


async def probe_async(
    base_urls: list[str], *, api_key: str | None = None, budget_s: float = 0.3
) -> list[ProbeResult]:
    """Probe every server at once; each result in the order of ``base_urls``.

    Args:
        base_urls: server roots to ask.
        api_key: sent as a bearer token when given.
        budget_s: total time budget in seconds; a server that has not answered by then gets
            ``error="no answer in time"``.

    Returns:
        one result per base URL.
    """
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    timeout = httpx.Timeout(budget_s)
    async with httpx.AsyncClient(headers=headers, timeout=timeout, trust_env=False) as client:
        tasks = [asyncio.create_task(_probe_one(client, url)) for url in base_urls]
        done, pending = await asyncio.wait(tasks, timeout=budget_s)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
    results = []
    for url, task in zip(base_urls, tasks, strict=True):
        if task in done and not task.cancelled() and task.exception() is None:
            results.append(task.result())
        else:
            results.append(ProbeResult(url, error="no answer in time"))
    return results


def probe(
    base_urls: list[str], *, api_key: str | None = None, budget_s: float = 0.3
) -> list[ProbeResult]:
    """Blocking :func:`probe_async` (runs its own event loop; call it outside any loop)."""
    return asyncio.run(probe_async(base_urls, api_key=api_key, budget_s=budget_s))
