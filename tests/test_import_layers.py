"""explorer's packages form layers, in the manner of import-linter's contracts, checked on the
source with ast: no import cycle between its subpackages and top-level modules (lazy imports
inside functions count: they are dependencies too), and Hugging Face plugs into the core through
the registries, imported by the app's entry points and the package root only.

The package root (explorer/__init__.py) is the composition root: it loads the plug-ins, so it is
no node of the graph, and no module imports anything from it but `__version__`.
"""

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "explorer"
# the app's outer layer, which may import the Hugging Face plug-in
ENTRY_POINTS = {"ui", "commands", "cli", "__main__", "hf"}


def node_of(module: str) -> str | None:
    """The graph node of a dotted module name: its subpackage or top-level module of explorer."""
    parts = module.split(".")
    if parts[0] != "explorer" or len(parts) < 2:
        return None
    if (PACKAGE / parts[1]).is_dir() or (PACKAGE / f"{parts[1]}.py").is_file():
        return parts[1]
    return None  # a name imported from the package root (`from explorer import __version__`)


def imports(path: Path):
    """(imported module, line) for every import in the file, absolute or relative."""
    package = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            yield module, node.lineno
            yield from ((f"{module}.{alias.name}", node.lineno) for alias in node.names)


def dependency_graph() -> dict[str, dict[str, set[str]]]:
    """node -> node it imports -> {"file:line", ...}"""
    graph: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for path in PACKAGE.rglob("*.py"):
        if path == PACKAGE / "__init__.py":
            continue
        source = node_of(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
        for module, line in imports(path):
            target = node_of(module)
            if target is not None and target != source:
                graph[source][target].add(f"{path.relative_to(PACKAGE.parent)}:{line}")
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


def test_no_cycle_between_explorers_packages():
    graph = dependency_graph()
    cycles = strongly_connected(graph)
    described = [
        "; ".join(f"{a} -> {b} ({', '.join(sorted(graph[a][b])[:3])})"
                  for a in sorted(group) for b in sorted(graph[a]) if b in group)
        for group in cycles
    ]
    assert not cycles, "import cycles between packages:\n" + "\n".join(described)


def test_a_found_cycle_fails(tmp_path):
    """The check itself: a graph with a cycle through three packages is reported."""
    graph = {"a": {"b": {"x"}}, "b": {"c": {"y"}}, "c": {"a": {"z"}}, "d": {"a": {"w"}}}
    assert strongly_connected(graph) == [{"a", "b", "c"}]


def test_only_the_entry_points_import_hugging_face():
    graph = dependency_graph()
    importers = {source for source, targets in graph.items() if "hf" in targets}
    assert importers <= ENTRY_POINTS, {s: sorted(graph[s]["hf"]) for s in importers - ENTRY_POINTS}


def test_nothing_imports_the_package_root_but_its_version():
    """`from explorer import durable` names a module (a node); anything else would be the root's."""
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "explorer" and not node.level:
                for alias in node.names:
                    is_module = node_of(f"explorer.{alias.name}") is not None
                    assert is_module or alias.name == "__version__", f"{path}:{node.lineno}"
