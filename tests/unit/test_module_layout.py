"""The tree is the map: packages by role that import one way, no import cycles, look-ups that land where
their names say; and the product does not import its test doubles (hermes_pipeline.testing is for tests
and benchmarks only)."""
import ast
import importlib
import pathlib
import subprocess
import sys

import pytest

import hermes_pipeline

IMPORT_ALL = """
import importlib, pathlib, sys
import hermes_pipeline
root = pathlib.Path(hermes_pipeline.__file__).parent
for path in sorted(root.rglob("*.py")):
    name = ".".join(("hermes_pipeline", *path.relative_to(root).with_suffix("").parts)).removesuffix(".__init__")
    if not name.startswith(("hermes_pipeline.testing", "hermes_pipeline.__main__")):
        importlib.import_module(name)
print(sorted(name for name in sys.modules if name.startswith("hermes_pipeline.testing")))
"""


def test_no_product_module_imports_the_testing_package():
    result = subprocess.run([sys.executable, "-c", IMPORT_ALL], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# -- the tree is the map ------------------------------------------------------------------------

ROOT = pathlib.Path(hermes_pipeline.__file__).parent
# the top level holds the entry points and the core types; everything else is in a package by role
TOP_LEVEL = {"__init__", "__main__", "cli", "show", "components", "transcript", "tokens", "usage"}


def _modules() -> dict[str, pathlib.Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        name = ".".join(("hermes_pipeline", *path.relative_to(ROOT).with_suffix("").parts)).removesuffix(".__init__")
        found[name] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the product modules it imports, wherever the import is (inside functions too)."""
    modules = _modules()
    graph = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(target + "."):
                    graph[name].add(target)     # a package's own __init__ is no arrow back up
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return None
    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_imports_itself_back_through_others():
    assert find_cycle(import_graph()) is None


def test_the_packages_by_role_import_one_way():
    """Rooms: each top-level module and each package (its subpackages inside it) of hermes_pipeline."""
    room = lambda name: ".".join(name.split(".")[:2])
    rooms: dict[str, set[str]] = {}
    for name, targets in import_graph().items():
        rooms.setdefault(room(name), set()).update(room(t) for t in targets if room(t) != room(name))
    assert find_cycle(rooms) is None


def test_the_top_level_holds_only_the_entry_points_and_the_core_types():
    top = {path.stem for path in ROOT.glob("*.py")}
    assert top == TOP_LEVEL


# A newcomer's look-ups: each lands in the module named after it.
LOOKUPS = [
    ("where the 85% safety net is decided", "hermes_pipeline.engine.safety_net", "hygiene_fires"),
    ("where the Claude Code writer is", "hermes_pipeline.formats.claude_code.writer", "write_session"),
    ("where the summary sections are built", "hermes_pipeline.summarizers.embedded.sections", "Collector"),
    ("where the retries are", "hermes_pipeline.summarizers.llm.retries", "retrying"),
    ("where the breaker is", "hermes_pipeline.summarizers.llm.breaker", "CircuitBreaker"),
    ("where a nightly run skips unchanged input", "hermes_pipeline.run.incremental", "reusable"),
]


@pytest.mark.parametrize("question, module, name", LOOKUPS, ids=[q for q, _, _ in LOOKUPS])
def test_a_look_up_lands_in_the_module_named_after_it(question, module, name):
    assert callable(getattr(importlib.import_module(module), name))
