"""The first lines of the transcript: which server and model, and the keys."""

from __future__ import annotations

from desk.config import ConnectionInfo

KEYS_LINE = "Enter sends · Ctrl+J new line · Esc stops the running turn · Ctrl+Q quits"
"""The keys every person needs first."""


def banner_text(connection: ConnectionInfo) -> str:
    """The banner for a connection; with the demo model it says so, and why.

    Args:
        connection: the server shown.

    Returns:
        two to four lines of plain text.
    """
    if connection.is_demo:
        why = ""
        if connection.source != "--demo":
            why = (
                "No model server was configured or found at llama.cpp's or Ollama's default "
                "address, so "
            )
        head = (
            f"desk · built-in demo model at {connection.base_url}\n"
            f"{why}{'r' if why else 'R'}eplies are canned text streamed at a realistic pace; "
            "pass --base-url (or set OPENAI_BASE_URL) to use a real server."
        )
    else:
        via = f" ({connection.source})" if connection.source else ""
        head = f"desk · {connection.model} at {connection.base_url}{via}"
    return f"{head}\n{KEYS_LINE}"
