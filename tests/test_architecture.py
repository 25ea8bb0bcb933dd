"""The parts of the code follow the data, and every import, top-level or inside a function,
goes one way:

* the analysis core's parts import only the parts before them (foundations -> read -> count
  -> review -> result -> figures -> output -> scale -> evaluate -> accumulator -> cli), so
  there is no import cycle, not even one held apart by a function-local import;
* the core never imports the app or Streamlit (the CLI's ``kieval dashboard`` starting the
  server is the one import of the app, named below);
* the app imports the core's public modules only, and its serving machinery imports no
  session-bound part of the app;
* ``docs/architecture.md`` names every module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "kieval_core"
APP = ROOT / "kieval_app"
#: Each part of the core and the rank of the layer it sits in; a module may import its own
#: layer or below.
LAYERS = {
    "_version": 0, "choices": 0, "exceptions": 0, "gcpause": 0, "limits": 0, "safe_text": 0, "validation": 0,
    "read": 1, "count": 2, "review": 3, "rules": 3, "keys": 4, "result": 4, "figures": 5, "output": 6,
    "scale": 7, "evaluate": 8, "accumulator": 9, "cli": 10, "__init__": 11,
}
#: The imports that go against the layers, each with its reason (and only these).
EXCEPTIONS = {
    # Jupyter's display protocol asks the result object itself for its HTML; the view
    # lives with the other figures and is imported when a notebook shows a result
    ("kieval_core.result.results", "kieval_core.figures.notebook"),
    # ``kieval dashboard`` starts the app's server; nothing else in the core needs the app
    ("kieval_core.cli", "kieval_app.serving.launch"),
}


def _modules(package: Path) -> dict[str, Path]:
    return {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
            for p in package.rglob("*.py")}


CORE_MODULES = _modules(CORE)
APP_MODULES = _modules(APP)
#: The app's scripts: the frame and its pages (run by Streamlit, not imported as a package).
APP_SCRIPTS = {p.relative_to(ROOT).as_posix(): p
               for p in [ROOT / "app.py", *sorted((ROOT / "app_pages").glob("*.py"))]}


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


def _imports(module: str | None, path: Path) -> set[str]:
    """Every module (and ``module.name``) that ``path`` imports when it runs, at any depth of its
    code (an import inside a function counts); relative imports resolved against ``module``."""
    package = "" if module is None else module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.update([target, *(f"{target}.{a.name}" for a in node.names)])
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def _top(name: str) -> str:
    return name.split(".")[0]


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The module ``name`` is or lies in (``pkg.mod.func`` -> ``pkg.mod``), if it is one of ``modules``."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def test_every_module_sits_in_a_known_part():
    assert {_part(m) for m in CORE_MODULES} <= set(LAYERS)


@pytest.mark.parametrize("module", sorted(CORE_MODULES))
def test_a_core_module_imports_only_its_own_layer_or_below(module):
    rank = LAYERS[_part(module)]
    above = sorted(t for t in _imports(module, CORE_MODULES[module])
                   if t in CORE_MODULES and LAYERS[_part(t)] > rank and (module, t) not in EXCEPTIONS)
    assert above == [], f"{module} imports from a later part: {above}"


def test_no_import_cycle_between_modules():
    modules = {**CORE_MODULES, **APP_MODULES}
    graph = {m: {t for t in _imports(m, p) if t in modules and t != m} for m, p in modules.items()}
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


@pytest.mark.parametrize("module", sorted(CORE_MODULES))
def test_the_core_never_imports_the_app_or_streamlit(module):
    outside = sorted(t for t in _imports(module, CORE_MODULES[module])
                     if _top(t) in {"kieval_app", "streamlit", "app_pages", "app"}
                     and (module, _known(t, APP_MODULES) or t) not in EXCEPTIONS)
    assert outside == [], f"{module} imports {outside}"


def test_the_exceptions_are_real():
    """Each allowed exception is still an import of the code (else it is a stale allowance)."""
    everything = {**CORE_MODULES, **APP_MODULES}
    for importer, imported in EXCEPTIONS:
        assert imported in _imports(importer, CORE_MODULES[importer]) or any(
            _known(t, everything) == imported for t in _imports(importer, CORE_MODULES[importer])
        ), (importer, imported)


APP_FILES = {**{m: (m, p) for m, p in APP_MODULES.items()}, **{s: (None, p) for s, p in APP_SCRIPTS.items()}}


@pytest.mark.parametrize("name", sorted(APP_FILES))
def test_the_app_imports_only_public_modules_of_the_core(name):
    module, path = APP_FILES[name]
    private = sorted(t for t in _imports(module, path) if _top(t) == "kieval_core"
                     and any(part.startswith("_") and part != "__version__" for part in t.split(".")))
    assert private == [], f"{name} imports private parts of the core: {private}"
    unknown = sorted(t for t in _imports(module, path) if _top(t) == "kieval_core"
                     and t.count(".") >= 1 and _known(t, CORE_MODULES) in {None, "kieval_core"}
                     and t.rpartition(".")[0] != "kieval_core")
    assert unknown == [], f"{name} imports modules the core does not have: {unknown}"


@pytest.mark.parametrize("module", sorted(m for m in APP_MODULES if m.startswith("kieval_app.serving")))
def test_serving_imports_no_session_bound_part_of_the_app(module):
    """The server's machinery (store, isolation, reaper, collector, launch, headless) knows the
    core and the app's file locations, never a session, a page or the sidebar."""
    app = sorted({_known(t, APP_MODULES) for t in _imports(module, APP_MODULES[module])
                  if _top(t) == "kieval_app"} - {None, "kieval_app"})
    assert all(m.startswith("kieval_app.serving") or m == "kieval_app.paths" for m in app), app


def test_the_architecture_page_names_every_module():
    page = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    parts = {f"kieval_core.{part}" for part in LAYERS}  # the parts themselves are the list above
    modules = [*CORE_MODULES, *APP_MODULES]
    unnamed = [m for m in modules if m not in {"kieval_core", "kieval_app"} and m not in parts
               and f"`{m}`" not in page and f"`.{m.rpartition('.')[2]}`" not in page]
    assert unnamed == []
    assert [s for s in APP_SCRIPTS if s != "app.py" and f"`{Path(s).stem}`" not in page
            and "`app_pages/`" not in page] == []


#: Functions allowed above the complexity limit, each with the issue that takes it down.
COMPLEX = {("app_pages/automation.py", "decision")}  # issue 31 moves its logic to the core
MAX_COMPLEXITY = 20
MAX_PAGE_FUNCTION_LINES = 80


def _python_files() -> list[Path]:
    bench = (ROOT / "bench").glob("*.py")
    return sorted([*CORE.rglob("*.py"), *APP.rglob("*.py"), *APP_SCRIPTS.values(), *bench])


def test_no_function_above_the_complexity_limit():
    """Cyclomatic complexity as radon counts it (every branch, loop, boolean operator and
    comprehension condition adds one)."""
    from radon.complexity import cc_visit

    above = []
    for path in _python_files():
        for block in cc_visit(path.read_text("utf-8")):
            name = f"{block.classname}.{block.name}" if getattr(block, "classname", None) else block.name
            if block.complexity > MAX_COMPLEXITY and (path.relative_to(ROOT).as_posix(), name) not in COMPLEX:
                above.append(f"{path.relative_to(ROOT)}:{name} ({block.complexity})")
    assert above == []


def test_a_page_function_fits_on_a_screen():
    """A page gathers input, makes one core call and renders: no function of a page over
    80 lines (the Automation page's decision excepted, as above)."""
    long = []
    for script, path in APP_SCRIPTS.items():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            function = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            if not function or (script, node.name) in COMPLEX:
                continue
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_PAGE_FUNCTION_LINES:
                long.append(f"{script}:{node.name} ({lines} lines)")
    assert long == []


def test_the_data_model_page_opens_with_the_glossary():
    """correction, mismatch, cause and error each defined once, before anything uses them."""
    page = (ROOT / "docs" / "data_model.md").read_text("utf-8")
    sections = [line for line in page.splitlines() if line.startswith("## ")]
    assert sections[0] == "## Glossary"
    glossary = page.split("## Glossary", 1)[1].split("\n## ", 1)[0]
    for word in ("correction", "mismatch", "cause", "error"):
        assert glossary.count(f"| **{word}** |") == 1, word
