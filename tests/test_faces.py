"""Package faces are light: importing one module of a package loads what that module needs, not
the whole package; the names a face offers are the ones its ``.pyi`` tells type checkers."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FACES = sorted(
    ".".join(stub.parent.relative_to(ROOT).parts)
    for package in ("agent", "contract", "tui_gateway", "desk", "demo_model", "asgi_server")
    for stub in (ROOT / package).rglob("__init__.pyi")
)


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.split())


def test_the_faces_are_found() -> None:
    assert {"agent.provider", "agent.compression", "agent.mcp", "demo_model"} <= set(FACES)


@pytest.mark.parametrize("package", FACES)
def test_a_face_offers_what_its_stub_declares(package: str) -> None:
    stub = ROOT.joinpath(*package.split("."), "__init__.pyi")
    declared: dict[str, str] = {}
    for node in ast.parse(stub.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module != "__future__":
            for alias in node.names:
                declared[alias.asname or alias.name] = node.module
    face = importlib.import_module(package)
    assert sorted(face.__all__) == sorted(declared)
    for name, module in declared.items():
        assert getattr(face, name) is getattr(importlib.import_module(module), name)
    with pytest.raises(AttributeError):
        face.NoSuchName  # noqa: B018


@pytest.mark.parametrize(
    ("code", "not_loaded"),
    [
        ("import agent.compression.status", {"agent.compression.engine", "agent.store", "httpx"}),
        ("import agent.provider.errors", {"agent.provider.client", "httpx"}),
        ("import agent.mcp.status", {"agent.mcp.connection", "agent.mcp.loop"}),
        ("import agent.tools.base", {"agent.tools.shell", "agent.tools.registry"}),
        ("import agent.store.errors", {"agent.store.sqlite", "agent.store.opener"}),
        ("import demo_model.config", {"demo_model.server", "uvicorn", "starlette"}),
        ("import contract.text", {"tui_gateway.gateway", "agent.agent"}),
    ],
)
def test_importing_one_module_loads_no_more_of_its_package(code: str, not_loaded: set[str]) -> None:
    assert loaded_after(code) & not_loaded == set()


def test_a_name_read_from_a_face_loads_its_module() -> None:
    loaded = loaded_after("from agent.compression import CompressionPhase")
    assert "agent.compression.status" in loaded
    assert "agent.compression.engine" not in loaded


@pytest.mark.parametrize("package", ["stops", "turns", "sessions", "settings", "servers", "events"])
def test_a_gateway_package_face_loads_none_of_its_modules(package: str) -> None:
    loaded = loaded_after(f"import tui_gateway.{package}")
    assert {name for name in loaded if name.startswith(f"tui_gateway.{package}.")} == set()
    assert "agent.agent" not in loaded


def test_reading_the_settings_loads_no_engine() -> None:
    loaded = loaded_after("import tui_gateway.settings.resolution")
    assert loaded & {"tui_gateway.gateway", "agent.agent", "httpx"} == set()
