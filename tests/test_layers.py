"""The layers hold: imports only go down, and no module of ours imports itself round a cycle.

``desk -> tui_gateway -> agent`` (DESIGN.md, section 1): ``agent`` imports neither
``tui_gateway`` nor ``desk``; ``tui_gateway`` imports neither ``desk`` nor ``demo_model`` (the
demo model is a fallback the desk starts, never a part of the gateway); nothing below ``desk``
imports Textual; ``demo_model`` (a server and a test fixture) imports nothing of ours but
``asgi_server``, the ASGI server it shares with ``desk serve``, which imports nothing of ours.
``contract`` (what every frontend imports) imports nothing of ``tui_gateway`` and only the
agent's light vocabulary modules; desk speaks to the gateway through ``contract`` only, but for
its composition root and a short, closed list of settings readers.
Inside ``desk``, a screen never imports the composition module (:mod:`desk.wiring`): the app
builds the controllers and hands a screen what it shows.

The import graph is read statically with :mod:`ast` from every module of the packages: every
``import`` and ``from ... import`` counts for the layers, wherever it is (inside a function,
under ``if TYPE_CHECKING:``). Cycles are looked for among the imports a module makes outside
its functions: those that run when it is loaded and those under ``if TYPE_CHECKING:`` (a type
checker reads them as imports; a cycle there is a knot in the design all the same), with
Tarjan's strongly connected components (R. Tarjan, "Depth-first search and linear graph
algorithms", SIAM J. Comput. 1972). An import inside a function is deferred on purpose and
closes no cycle.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agent", "contract", "tui_gateway", "desk", "demo_model", "asgi_server")

FORBIDDEN: dict[str, frozenset[str]] = {
    "agent": frozenset({"contract", "tui_gateway", "desk", "demo_model", "textual"}),
    "contract": frozenset({"tui_gateway", "desk", "textual", "demo_model"}),
    "tui_gateway": frozenset({"desk", "demo_model", "textual"}),
    "demo_model": frozenset({"agent", "contract", "tui_gateway", "desk", "textual"}),
    "asgi_server": frozenset({"agent", "contract", "tui_gateway", "desk", "demo_model", "textual"}),
    "desk": frozenset(),
}
"""Top-level package -> the top-level names its modules may never import."""

SCREENS = "desk.screens"
"""desk's screens: they show what the app hands them."""

WIRING = "desk.wiring"
"""desk's composition module: builds the controllers; only the app imports it."""

CONTRACT_AGENT_VOCABULARY = frozenset(
    {
        "agent.compression.status",
        "agent.events",
        "agent.mcp.status",
        "agent.outcome",
        "agent.stops",
        "agent.terminal_text",
        "agent.tokens",
        "agent.usage",
    }
)
"""The agent modules ``contract`` may import: its words (stops, outcomes, statuses, usage, the
agent's events a payload extends) and its text rules, each light (no engine, no HTTP client)."""

DESK_COMPOSITION = frozenset(
    {"desk.__main__", "desk.wiring", "desk.demo", "desk.web.command", "desk.web.server"}
)
"""desk's composition roots and its wiring module: they build the gateway (or start the remote
client, the demo model for the wire commands, or ``desk web``'s server with the gateway's token
and host checks) and may import any of ``tui_gateway``."""

DESK_SETTINGS_READERS: dict[str, frozenset[str]] = {
    "desk.config": frozenset(
        {
            "tui_gateway.settings.config_file",
            "tui_gateway.settings.resolution",
            "tui_gateway.settings.settings_flags",
        }
    ),
    "desk.user_config": frozenset({"tui_gateway.settings.config_file"}),
    "desk.app": frozenset({"tui_gateway.settings.resolution"}),
    "desk.widgets.prompt_input": frozenset({"tui_gateway.settings.resolution"}),
    "desk.stop_key": frozenset({"tui_gateway.settings.resolution"}),
    "desk.screens.desk_widgets": frozenset({"tui_gateway.settings.resolution"}),
    "desk.probe": frozenset({"tui_gateway.servers.model_server"}),
    "desk.export": frozenset({"tui_gateway.atomic"}),
}
"""What else of ``tui_gateway`` a desk module reads, module by module: the settings a person
writes (file and flags), the model server's list of models (start-up's probe), the atomic file
write. A closed list: it only shrinks (as the settings get a face of their own)."""

ACP_PACKAGE = "tui_gateway.acp"
"""The ACP frontend: a door of the gateway beside the wire (DESIGN.md, section 10)."""

ACP_ENTRY_POINTS = frozenset({"desk.__main__"})
"""The modules outside the ACP package that may start it (the ``desk acp`` command)."""


@dataclass(frozen=True, slots=True)
class Import:
    """One imported module name, where it is, and when it is imported: ``at_load`` when the
    module is loaded, ``typing`` under ``if TYPE_CHECKING:`` (never at run time, but read by
    the type checker); neither for an import inside a function (when it is called)."""

    target: str
    line: int
    at_load: bool
    typing: bool = False


def module_name(path: Path) -> str:
    """``agent/store/__init__.py`` -> ``agent.store``; ``agent/agent.py`` -> ``agent.agent``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def our_modules() -> dict[str, Path]:
    """Every module of the four packages, by dotted name."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[module_name(path)] = path
    return found


def _type_checking(node: ast.AST) -> bool:
    """True for ``if TYPE_CHECKING:`` (its body never runs at load time; its ``else`` does)."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> Iterator[Import]:
    """Every module ``name`` imports: names of ours resolved to the module they reach
    (``from agent.store import rows`` reaches ``agent.store.rows``), others as written."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def walk(nodes: Iterable[ast.AST], at_load: bool, typing: bool) -> Iterator[Import]:
        for child in nodes:
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield Import(alias.name, child.lineno, at_load, typing)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in child.names:
                    sub = f"{base}.{alias.name}"
                    yield Import(sub if sub in modules else base, child.lineno, at_load, typing)
            elif isinstance(child, ast.If) and _type_checking(child):
                yield from walk(child.body, False, at_load or typing)
                yield from walk(child.orelse, at_load, typing)
            else:
                later = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                yield from walk(ast.iter_child_nodes(child), at_load and not later, typing)

    yield from walk([tree], True, False)


def graph() -> dict[str, list[Import]]:
    """Module -> what it imports (a fresh copy the caller may change)."""
    return {name: list(found) for name, found in _graph().items()}


@functools.cache
def _graph() -> dict[str, tuple[Import, ...]]:
    modules = our_modules()
    return {
        name: (*imports_of(name, path, modules), *_stub_imports(name, path, modules))
        for name, path in modules.items()
    }


def _stub_imports(name: str, path: Path, modules: dict[str, Path]) -> Iterator[Import]:
    """A light package face imports its names on first use (:mod:`agent.faces`), by strings
    no import statement shows; its ``.pyi`` beside it names them for type checkers, so they
    count as ``TYPE_CHECKING`` imports of the package."""
    stub = path.with_suffix(".pyi")
    if stub.exists():
        for imp in imports_of(name, stub, modules):
            yield Import(imp.target, imp.line, False, True)


def back_edges(edges: dict[str, list[Import]]) -> list[str]:
    """One line per import that goes against the layers."""
    wrong = []
    for name, found in sorted(edges.items()):
        banned = FORBIDDEN[name.split(".")[0]]
        for imp in found:
            if imp.target.split(".")[0] in banned:
                wrong.append(f"{name} (line {imp.line}) imports {imp.target}")
    return wrong


def _inside(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def contract_edges(edges: dict[str, list[Import]]) -> list[str]:
    """One line per import of ``contract`` that reaches past the agent's vocabulary."""
    wrong = []
    for name, found in sorted(edges.items()):
        if not _inside(name, "contract"):
            continue
        for imp in found:
            if _inside(imp.target, "agent") and imp.target not in CONTRACT_AGENT_VOCABULARY:
                wrong.append(f"{name} (line {imp.line}) imports {imp.target}")
    return wrong


def desk_edges(edges: dict[str, list[Import]]) -> list[str]:
    """One line per import by desk of the gateway's package that is not the contract (the
    composition root and the settings readers' own modules excepted)."""
    wrong = []
    for name, found in sorted(edges.items()):
        if not _inside(name, "desk") or name in DESK_COMPOSITION:
            continue
        allowed = DESK_SETTINGS_READERS.get(name, frozenset())
        for imp in found:
            if _inside(imp.target, "tui_gateway") and imp.target not in allowed:
                wrong.append(f"{name} (line {imp.line}) imports {imp.target}")
    return wrong


def frontend_edges(edges: dict[str, list[Import]]) -> list[str]:
    """One line per import that breaks the ACP frontend's place: only it imports the ACP SDK
    (``acp``); nothing but its entry point imports it; it never imports the desk or Textual
    (the layers say so already) nor the other doors (the HTTP server, the stdio host)."""
    wrong = []
    doors = ("tui_gateway.wire.stdio", "tui_gateway.wire.http_server", "tui_gateway.wire.http_api")
    for name, found in sorted(edges.items()):
        ours = _inside(name, ACP_PACKAGE)
        for imp in found:
            if not ours and _inside(imp.target, "acp"):
                wrong.append(f"{name} (line {imp.line}) imports the ACP SDK ({imp.target})")
            if not ours and name not in ACP_ENTRY_POINTS and _inside(imp.target, ACP_PACKAGE):
                wrong.append(f"{name} (line {imp.line}) imports {imp.target}")
            if ours and any(_inside(imp.target, door) for door in doors):
                wrong.append(f"{name} (line {imp.line}) imports another door, {imp.target}")
    return wrong


def screen_edges(edges: dict[str, list[Import]]) -> list[str]:
    """One line per import of the composition module (:data:`WIRING`) by a screen."""
    return [
        f"{name} (line {imp.line}) imports {imp.target}"
        for name, found in sorted(edges.items())
        if _inside(name, SCREENS)
        for imp in found
        if _inside(imp.target, WIRING)
    ]


def cycles(edges: dict[str, list[Import]]) -> list[list[str]]:
    """The import cycles among our modules (imports outside functions: at load time and under
    ``if TYPE_CHECKING:``)."""
    load = {
        name: sorted({i.target for i in found if (i.at_load or i.typing) and i.target in edges})
        for name, found in edges.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan: recursion depth is the import chain's length
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in load[node]:
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in load[node]:
                found.append(sorted(component))

    for node in sorted(load):
        if node not in index:
            connect(node)
    return found


def test_the_graph_sees_every_package() -> None:
    edges = graph()
    assert {name.split(".")[0] for name in edges} == set(PACKAGES)
    assert any(i.target == "textual" or i.target.startswith("textual.") for i in edges["desk.app"])


def test_imports_only_go_down() -> None:
    assert back_edges(graph()) == []


def test_desk_speaks_to_the_gateway_through_the_contract_only() -> None:
    edges = graph()
    assert any(_inside(i.target, "contract") for i in edges["desk.bridge"])
    assert desk_edges(edges) == []


def test_the_contract_imports_only_the_agents_vocabulary() -> None:
    assert contract_edges(graph()) == []


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("desk.widgets.status_bar", "from tui_gateway.gateway import Gateway\n"),
        (
            "desk.app",
            "from tui_gateway.sessions.state import Session\n",
        ),  # a settings reader, not this
        (
            "desk.controllers.turns",
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n"
            "    import tui_gateway.turns.turn_runner\n",
        ),
        ("desk.bridge", "import tui_gateway\n"),
    ],
)
def test_desk_reaching_past_the_contract_is_found(module: str, source: str, tmp_path: Path) -> None:
    path = tmp_path / "probe.py"
    path.write_text(source, encoding="utf-8")
    edges = graph()
    edges[module] = list(imports_of(module, path, our_modules()))
    assert [line for line in desk_edges(edges) if line.startswith(module)]


def test_the_composition_root_may_build_the_gateway(tmp_path: Path) -> None:
    path = tmp_path / "probe.py"
    path.write_text("from tui_gateway.assembly import build_gateway\n", encoding="utf-8")
    edges = graph()
    edges["desk.__main__"] = list(imports_of("desk.__main__", path, our_modules()))
    assert desk_edges(edges) == []


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("contract.results", "from agent.agent import Agent\n"),
        ("contract.events", "def f():\n    from agent.provider.client import ChatClient\n"),
    ],
)
def test_the_contract_reaching_into_the_engine_is_found(
    module: str, source: str, tmp_path: Path
) -> None:
    path = tmp_path / "probe.py"
    path.write_text(source, encoding="utf-8")
    edges = graph()
    edges[module] = list(imports_of(module, path, our_modules()))
    assert [line for line in contract_edges(edges) if line.startswith(module)]


def test_importing_the_contract_loads_nothing_of_the_gateway() -> None:
    code = (
        "import sys, contract, contract.events, contract.ports, contract.results\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('tui_gateway', 'desk', 'textual'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.split() == []


def test_the_acp_frontend_keeps_its_place() -> None:
    edges = graph()
    assert any(_inside(name, ACP_PACKAGE) for name in edges)
    assert frontend_edges(edges) == []


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("tui_gateway.wire.cli", "from acp import schema\n"),
        ("tui_gateway.gateway", "def f():\n    from tui_gateway.acp.agent import DeskAgent\n"),
        ("tui_gateway.acp.agent", "from tui_gateway.wire.stdio import StdioServer\n"),
    ],
)
def test_a_misplaced_acp_import_is_found(module: str, source: str, tmp_path: Path) -> None:
    path = tmp_path / "probe.py"
    path.write_text(source, encoding="utf-8")
    edges = graph()
    edges[module] = list(imports_of(module, path, our_modules()))
    assert [line for line in frontend_edges(edges) if line.startswith(module)]


def test_no_import_cycle_between_our_modules() -> None:
    assert cycles(graph()) == []


@pytest.mark.parametrize(
    ("module", "source", "wrong"),
    [
        ("agent.events", "def f():\n    import tui_gateway.events\n", "tui_gateway.events"),
        (
            "tui_gateway.sessions.state",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from desk import app\n",
            "desk.app",
        ),
        ("demo_model.server", "from agent.stops import Surface\n", "agent.stops"),
        ("tui_gateway.wire.http_server", "from demo_model.server import X\n", "demo_model.server"),
        (
            "tui_gateway.wire.options",
            "def f():\n    from demo_model.server import DemoModelServer\n",
            "demo_model.server",
        ),
        ("asgi_server", "from tui_gateway.gateway import Gateway\n", "tui_gateway.gateway"),
        ("agent.stops", "from textual.app import App\n", "textual.app"),
        (
            "contract.results",
            "from tui_gateway.sessions.state import Session\n",
            "tui_gateway.sessions.state",
        ),
        ("contract.ports", "import tui_gateway\n", "tui_gateway"),
        ("agent.outcome", "from contract.kinds import TurnActivity\n", "contract.kinds"),
    ],
)
def test_a_back_edge_anywhere_in_a_module_is_found(
    module: str, source: str, wrong: str, tmp_path: Path
) -> None:
    path = tmp_path / "probe.py"
    path.write_text(source, encoding="utf-8")
    edges = graph()
    edges[module] = list(imports_of(module, path, our_modules()))
    assert [line for line in back_edges(edges) if line.endswith(f"imports {wrong}")]


def test_a_cycle_is_found() -> None:
    edges = graph()
    edges["agent.outcome"] = [*edges["agent.outcome"], Import("agent.stops", 1, True)]
    assert ["agent.outcome", "agent.stops"] in cycles(edges)
    edges["agent.outcome"][-1] = Import("agent.stops", 1, False)  # inside a function: fine
    assert cycles(edges) == []


def test_a_cycle_through_type_checking_imports_is_found(tmp_path: Path) -> None:
    path = tmp_path / "probe.py"
    path.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from agent.outcome import X\n",
        encoding="utf-8",
    )
    edges = graph()
    edges["agent.stops"] = [*edges["agent.stops"], *imports_of("agent.stops", path, our_modules())]
    edges["agent.outcome"] = [*edges["agent.outcome"], Import("agent.stops", 1, True)]
    assert ["agent.outcome", "agent.stops"] in cycles(edges)


def test_no_screen_imports_the_wiring() -> None:
    edges = graph()
    assert any(_inside(name, SCREENS) for name in edges) and WIRING in edges
    assert screen_edges(edges) == []


@pytest.mark.parametrize(
    "source",
    [
        "from desk.wiring import DeskWidgets\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from desk import wiring\n",
        "def f():\n    import desk.wiring\n",
    ],
)
def test_a_screen_that_imports_the_wiring_is_found(source: str, tmp_path: Path) -> None:
    path = tmp_path / "probe.py"
    path.write_text(source, encoding="utf-8")
    edges = graph()
    edges["desk.screens.help_screen"] = list(
        imports_of("desk.screens.help_screen", path, our_modules())
    )
    wrong = screen_edges(edges)
    assert [line for line in wrong if line.startswith("desk.screens.help_screen (line")]
