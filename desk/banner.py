"""The first lines of the transcript: a short welcome saying which server and model, and the keys.

With the built-in demo model, the welcome also says how to point desk at a real server
(llama.cpp, Ollama, OpenAI), with the flags and environment variables to use.
"""

from __future__ import annotations

from contract.text import terminal_safe
from desk.config import ConnectionInfo

KEYS_LINE = "Enter sends · Ctrl+J new line · Esc stops · F1 help · Ctrl+P commands · Ctrl+Q quits"
"""The keys every person needs first."""

REAL_SERVER_HINTS = (
    "To use a real model:\n"
    "  llama.cpp  start llama-server (port 8080): desk finds it\n"
    "  Ollama     start ollama serve (port 11434): desk finds it\n"
    "  OpenAI     OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-… "
    "desk --model gpt-4o-mini\n"
    "  any other  desk --base-url URL --model NAME [--api-key KEY], or base_url, model and "
    "api_key in {config}"
)
"""How to point desk at llama.cpp, Ollama or OpenAI (shown with the demo model)."""


def banner_text(connection: ConnectionInfo, config_file: str = "~/.config/desk/config.toml") -> str:
    """The welcome for a connection; with the demo model it says so, why, and what else works.

    Args:
        connection: the server shown.
        config_file: the config file, as it should be named to the person.

    Returns:
        a few lines of plain text.
    """
    if connection.is_demo:
        why = ""
        if connection.source != "--demo":
            why = (
                "No model server was configured or found at llama.cpp's or Ollama's default "
                "address, so "
            )
        head = (
            f"Welcome to desk · built-in demo model at {connection.base_url}\n"
            f"{why}{'r' if why else 'R'}eplies are canned text streamed at a realistic pace.\n"
            f"{REAL_SERVER_HINTS.format(config=config_file)}"
        )
    else:
        via = f" ({connection.source})" if connection.source else ""
        model = f"{connection.model} at" if connection.model else "the model server at"
        head = f"Welcome to desk · {model} {connection.base_url}{via}"
    return terminal_safe(f"{head}\n{KEYS_LINE}")  # the model's name is the server's
