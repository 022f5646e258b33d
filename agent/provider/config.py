"""Where and how to reach the model server: :class:`ProviderConfig`.

Its own module, importing nothing else of the provider (nor httpx), so that what only names a
server (the desk's start, the settings, :mod:`agent.provider.connection`) loads no client.
:mod:`agent.provider.client` re-exports it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    """Where and how to reach the model server.

    Attributes:
        base_url: the OpenAI-compatible root, ending in ``/v1`` (e.g. ``http://127.0.0.1:8080/v1``).
        model: the model name sent with every request.
        api_key: bearer token, or None for local servers that need none.
        connect_timeout: seconds to wait for the TCP connection.
        write_timeout: seconds to wait while sending the request body.
        read_timeout: seconds to wait between bytes; None waits for ever (a slow prompt on a
            local server can take minutes; the turn's stop and inactivity guards end the wait).
    """

    base_url: str
    model: str
    api_key: str | None = None
    connect_timeout: float = 10.0
    write_timeout: float = 30.0
    read_timeout: float | None = None

    @property
    def completions_url(self) -> str:
        """The full ``.../chat/completions`` URL."""
        return self.base_url.rstrip("/") + "/chat/completions"
