"""Every HTTP client of the agent and the gateway takes the process's one TLS context.

An ``httpx`` client built without one makes its own at construction (the certificate bundle
read again, about 29 ms of CPU), even for a plain-HTTP server: paid at every check of the
model server, every context-window lookup and every count of a request. The clients are found
statically (:mod:`ast`): ``httpx.Client(...)``, ``httpx.AsyncClient(...)`` and the one-request
functions (``httpx.get(...)``...), which build a client each.
desk's start-up probe (one client per start, before any gateway) is not among them.
"""

from __future__ import annotations

import ast
import ssl
from pathlib import Path

from agent.provider.tls import shared_ssl_context

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agent", "tui_gateway")
CLIENTS = frozenset(
    {
        "Client",
        "AsyncClient",
        "request",
        "stream",
        "get",
        "options",
        "head",
        "post",
        "put",
        "patch",
        "delete",
    }
)


def client_calls(path: Path) -> list[tuple[int, bool]]:
    """``(line, passes verify=)`` of each httpx client built in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner = node.func.value
        if isinstance(owner, ast.Name) and owner.id == "httpx" and node.func.attr in CLIENTS:
            found.append((node.lineno, any(k.arg == "verify" for k in node.keywords)))
    return found


def test_every_client_takes_the_shared_context() -> None:
    calls = {
        f"{path.relative_to(ROOT)}:{line}": verify
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, verify in client_calls(path)
    }
    assert len(calls) >= 6, calls  # turns, server check, window, counts, the run's model checks
    assert [where for where, verify in calls.items() if not verify] == []


def test_the_shared_context_is_one_and_verifies_certificates() -> None:
    context = shared_ssl_context()
    assert shared_ssl_context() is context
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
