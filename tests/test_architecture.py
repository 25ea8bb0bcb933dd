"""The analysis core's parts follow the data: each sub-package imports only from the parts
before it (foundations -> read -> count -> review -> report -> scale -> evaluate -> accumulator
-> cli), so there is no
import cycle, not even one held apart by a function-local import; and the core never
imports Streamlit."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[1] / "kieval_core"
#: Each part and the rank of the layer it sits in; a module may import its own layer or below.
LAYERS = {
    "_version": 0, "exceptions": 0, "gcpause": 0, "limits": 0, "safe_text": 0, "validation": 0,
    "read": 1, "count": 2, "review": 3, "report": 4, "scale": 5,
    "evaluate": 6, "accumulator": 7, "cli": 8, "__init__": 9,
}


def _modules() -> dict[str, Path]:
    return {".".join(p.relative_to(CORE.parent).with_suffix("").parts).removesuffix(".__init__"): p
            for p in CORE.rglob("*.py")}


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _runtime_nodes(tree: ast.AST):
    """Every node of ``tree`` but those under ``if TYPE_CHECKING:`` (imports for type hints only
    never run)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            continue
        yield node
        yield from _runtime_nodes(node)


def _imports(module: str, path: Path) -> set[str]:
    """Every kieval_core module ``module`` imports when it runs, at any depth of its code (an
    import inside a function counts)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{a.name}" for a in node.names]
            found.update(n for n in [target, *names] if n.startswith("kieval_core"))
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("kieval_core"))
    return found


MODULES = _modules()


def test_every_module_sits_in_a_known_part():
    assert {_part(m) for m in MODULES} <= set(LAYERS)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_imports_only_its_own_layer_or_below(module):
    rank = LAYERS[_part(module)]
    above = sorted(t for t in _imports(module, MODULES[module])
                   if t in MODULES and LAYERS[_part(t)] > rank)
    assert above == [], f"{module} imports from a later part: {above}"


def test_no_import_cycle_between_modules():
    graph = {m: {t for t in _imports(m, p) if t in MODULES and t != m} for m, p in MODULES.items()}
    # a package's __init__ re-exporting its modules is not a cycle: drop edges into parents
    graph = {m: {t for t in ts if not m.startswith(t + ".")} for m, ts in graph.items()}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = trail[trail.index(nxt):] + [nxt] if nxt in trail else [node, nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_the_core_never_imports_streamlit():
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text("utf-8"))
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not any(n.split(".")[0] == "streamlit" for n in names), module


def test_the_architecture_page_names_every_module():
    page = (CORE.parent / "docs" / "architecture.md").read_text("utf-8")
    parts = {f"kieval_core.{part}" for part in LAYERS}  # the parts themselves are the list above
    unnamed = [m for m in MODULES if m != "kieval_core" and m not in parts
               and f"`{m}`" not in page and f"`.{m.rpartition('.')[2]}`" not in page]
    assert unnamed == []
