"""explorer's packages form layers, in the manner of import-linter's contracts, checked on the
source with ast: no import cycle between its subpackages and top-level modules (lazy imports
inside functions count: they are dependencies too, and so do modules named in strings, "module" or
"module:Name", and `importlib.import_module(f"explorer.x.{...}")` calls: what importlib loads is a
dependency like an import statement), and Hugging Face plugs into the core through the registries,
imported by the app's entry points and the package root only.

The package root (explorer/__init__.py) is the composition root: it hands the family registries
the loader of the plug-ins (run on their first lookup), so it is no node of the graph, and no
module imports anything from it but `__version__`.
"""

import ast
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "explorer"
# the app's outer layer, which may import the Hugging Face plug-in
# (usermodel: explorer.show and --model, where a user's Hugging Face tokenizer comes in)
ENTRY_POINTS = {"ui", "commands", "cli", "__main__", "hf", "usermodel"}
# The two tables of things above them: the app's family table names each family's behaviours
# (training.objectives' loss, training.feeds' batches, analysis.probe's encoder) as Lazy
# "module:function", resolved on first call, and the panel table names the UI's panel classes and
# export's headless tables for the UI and the export command to load. Each is the one place a new
# family or panel is listed; nothing else may name a module above it in a string.
STRING_TABLES = {("families.py", "training"), ("families.py", "analysis"),
                 ("panel_registry.py", "ui"), ("panel_registry.py", "export")}
# "explorer.a.b" or "explorer.a.b:Name" (or a table's prefix "explorer.a.b:"), the whole string
MODULE_STRING = re.compile(r"explorer(?:\.[A-Za-z_]\w*)+(?::\w*)?")


def node_of(module: str, package: Path = PACKAGE) -> str | None:
    """The graph node of a dotted module name: its subpackage or top-level module of explorer."""
    parts = module.split(".")
    if parts[0] != "explorer" or len(parts) < 2:
        return None
    if (package / parts[1]).is_dir() or (package / f"{parts[1]}.py").is_file():
        return parts[1]
    return None  # a name imported from the package root (`from explorer import __version__`)


def string_imports(tree: ast.AST):
    """(module, line) for every module named in a string: a whole-string "explorer.a.b[:Name]"
    constant, and the literal start of an f-string given to import_module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if MODULE_STRING.fullmatch(node.value):
                yield node.value.partition(":")[0], node.lineno
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", ""))
              == "import_module" and node.args and isinstance(node.args[0], ast.JoinedStr)):
            start = node.args[0].values[0]
            if isinstance(start, ast.Constant) and MODULE_STRING.match(start.value):
                yield MODULE_STRING.match(start.value).group(0), node.lineno


def imports(path: Path, package_root: Path = PACKAGE):
    """(imported module, line) for every import in the file, absolute or relative, and every
    module it names in a string (`string_imports`) but a table's (STRING_TABLES)."""
    package = path.relative_to(package_root.parent).with_suffix("").parts[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = path.relative_to(package_root).as_posix()
    for module, line in string_imports(tree):
        if (where, node_of(module, package_root)) not in STRING_TABLES:
            yield module, line
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            yield module, node.lineno
            yield from ((f"{module}.{alias.name}", node.lineno) for alias in node.names)


def dependency_graph(package: Path = PACKAGE) -> dict[str, dict[str, set[str]]]:
    """node -> node it imports -> {"file:line", ...}"""
    graph: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for path in package.rglob("*.py"):
        if path == package / "__init__.py":
            continue
        source = node_of(".".join(path.relative_to(package.parent).with_suffix("").parts), package)
        for module, line in imports(path, package):
            target = node_of(module, package)
            if target is not None and target != source:
                graph[source][target].add(f"{path.relative_to(package.parent)}:{line}")
    return graph


def strongly_connected(graph) -> list[set[str]]:
    """Tarjan's algorithm: the groups of nodes that reach each other (a cycle each)."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            groups.append(group)

    for node in list(graph):
        if node not in index:
            visit(node)
    return [group for group in groups if len(group) > 1]


def test_the_graph_sees_the_packages_and_their_lazy_imports():
    graph = dependency_graph()
    assert {"training", "decoding", "analysis", "runs", "hf", "ui", "families"} <= set(graph)
    assert "families" in graph["training"]  # a module-level import
    assert "training" in graph["runs"]  # RunReader.open_snapshot's import inside a method


def layer_problems(package: Path = PACKAGE) -> list[str]:
    """Every import cycle between packages, and every import of explorer.hf outside the entry
    points, as one line each (empty: the layers hold)."""
    graph = dependency_graph(package)
    cycles = strongly_connected(graph)
    described = [
        "; ".join(f"{a} -> {b} ({', '.join(sorted(graph[a][b])[:3])})"
                  for a in sorted(group) for b in sorted(graph[a]) if b in group)
        for group in cycles
    ]
    importers = {source for source, targets in graph.items() if "hf" in targets}
    upward = [f"{s} -> hf ({', '.join(sorted(graph[s]['hf']))})" for s in importers - ENTRY_POINTS]
    return [f"import cycle: {line}" for line in described] + upward


def test_no_cycle_between_explorers_packages():
    problems = layer_problems()
    assert not problems, "\n".join(problems)


def test_a_found_cycle_fails(tmp_path):
    """The check itself: a graph with a cycle through three packages is reported."""
    graph = {"a": {"b": {"x"}}, "b": {"c": {"y"}}, "c": {"a": {"z"}}, "d": {"a": {"w"}}}
    assert strongly_connected(graph) == [{"a", "b", "c"}]


def test_only_the_entry_points_import_hugging_face():
    graph = dependency_graph()
    importers = {source for source, targets in graph.items() if "hf" in targets}
    assert importers <= ENTRY_POINTS, {s: sorted(graph[s]["hf"]) for s in importers - ENTRY_POINTS}


def test_strings_naming_modules_are_read():
    tree = ast.parse('X = ("explorer.hf.activations:PROVIDER", "explorer.export.headless:")\n'
                     'importlib.import_module(f"explorer.commands.{name}")\n'
                     'Y = "see explorer.hf for models"; Z = importlib.import_module(name)\n')
    assert sorted(string_imports(tree)) == [
        ("explorer.commands", 2), ("explorer.export.headless", 1), ("explorer.hf.activations", 1)]


@pytest.mark.parametrize("planted, found, line", [
    # the line issue 35 removed: the activation core naming the Hugging Face provider
    ('_PLUGIN = "explorer.hf.activations:PROVIDER"\n', "analysis -> hf", 1),
    # a core module loading a UI module by name
    ('def _panel():\n    return importlib.import_module("explorer.ui.panels.curves")\n',
     "import cycle: analysis -> ui", 2),
])
def test_a_planted_upward_string_import_fails(tmp_path, planted, found, line):
    """A copy of the package with one upward import hidden in a string: the checks fail on it,
    naming the planted file and line; the untouched copy passes."""
    copy = tmp_path / "explorer"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.md", "resources"))
    assert layer_problems(copy) == []
    target = copy / "analysis" / "activations" / "core.py"
    lines = target.read_text(encoding="utf-8").count("\n")
    target.write_text(target.read_text(encoding="utf-8") + planted, encoding="utf-8")
    problems = "\n".join(layer_problems(copy))
    assert found in problems and f"explorer/analysis/activations/core.py:{lines + line}" in problems


def test_nothing_imports_the_package_root_but_its_version():
    """`from explorer import durable` names a module (a node); anything else would be the root's."""
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "explorer" and not node.level:
                for alias in node.names:
                    is_module = node_of(f"explorer.{alias.name}") is not None
                    assert is_module or alias.name == "__version__", f"{path}:{node.lineno}"


def test_importing_the_errors_loads_no_plug_in_until_a_family_is_asked_for():
    """`import explorer.errors` runs the package root, which registers the plug-ins' loader only:
    no explorer.hf or explorer.ui module is imported until the family registry is first read."""
    code = ("import sys, explorer.errors\n"
            "def loaded(): return sorted(m for m in sys.modules if m.startswith(('explorer.hf', 'explorer.ui')))\n"
            "print(loaded())\n"
            "from explorer.families import get_family\n"
            "print(get_family('hf-causal-lm').name, 'explorer.hf.families' in loaded())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(PACKAGE.parent)}).stdout.splitlines()
    assert out == ["[]", "hf-causal-lm True"]
