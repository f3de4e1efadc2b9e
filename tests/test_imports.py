"""The package's modules import each other without a cycle: each layer imports only the
layers below it (base -> structures -> trainers -> components -> model -> training,
CLI and bridges). Imports inside functions count too: a deferred import is still a
dependency."""
from __future__ import annotations

import ast
from pathlib import Path

import arborist

PACKAGE = Path(arborist.__file__).resolve().parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: set[str]) -> set[str]:
    """The package modules that the file at `path` imports (Python and Cython `cimport`s alike)."""
    name = module_name(path)
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".pyx", ".pxd"):  # Cython: the lines that are imports (cimport read as import)
        lines = []
        for line in text.splitlines():
            line = line.strip().replace(" cimport ", " import ")
            if line.startswith(("from ", "import ")) and not line.startswith("from libc"):
                try:
                    ast.parse(line)
                except SyntaxError:  # docstring prose that starts with "from"
                    continue
                lines.append(line)
        text = "\n".join(lines)
    found = set()
    for node in ast.walk(ast.parse(text)):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(max(node.level - 1, 0)):
                base = base.rpartition(".")[0]
            stem = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
            targets = [stem] + [f"{stem}.{a.name}" for a in node.names]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            # a package is always imported before its modules: that edge is no dependency
            if target and target != name and not name.startswith(target + "."):
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    files = [p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".pyx", ".pxd")]
    modules = {module_name(p) for p in files}
    graph: dict[str, set[str]] = {}
    for path in files:
        graph.setdefault(module_name(path), set()).update(imports(path, modules))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found, state, stack = [], {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if state.get(other) == 1:
                found.append(stack[stack.index(other):] + [other])
            elif other not in state:
                visit(other)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert len(graph) > 30 and "arborist.train" in graph  # the walk saw the package
    assert cycles(graph) == []


def test_the_walk_finds_a_cycle():
    """The check can fail: the circle that tree.py and second_order.py once had is found."""
    graph = import_graph()
    assert "arborist.parser.tree" in graph["arborist.parser.second_order"]
    graph["arborist.parser.tree"] = graph["arborist.parser.tree"] | {"arborist.parser.second_order"}
    assert ["arborist.parser.second_order", "arborist.parser.tree", "arborist.parser.second_order"] in cycles(graph)


def test_no_core_module_names_a_component_kind():
    """model.py, train.py, cli.py and spacy_components.py loop over components: none imports
    a kind's module or names a kind's class."""
    kinds = {"Tagger", "Parser", "Labeler", "Pruner", "LinearChain", "DependencyTree", "ArcLabels", "ArcPruner"}
    for name in ("model", "train", "cli", "spacy_components"):
        path = PACKAGE / f"{name}.py"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
            n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        assert not used & kinds, (name, used & kinds)
        assert not any(m.startswith("arborist.components") for m in imports(path, set(import_graph())))


def test_python_from_the_repository_root_imports_the_installed_package():
    """The src layout: from the repository root, `import arborist` finds the installed
    (compiled) package, never an uncompiled source tree in the working directory."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]  # the repository, wherever the package is installed
    done = subprocess.run([sys.executable, "-c", "import arborist, arborist.weights; print(arborist.__file__)"],
                          cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not (root / "arborist").exists()  # nothing for the working directory to shadow
    assert Path(done.stdout.strip()).resolve().parent != root / "arborist"
