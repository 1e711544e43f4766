"""Package-level import graph of ``clapcap``, drawn as Mermaid in docs/architecture.md.

Every module under ``src/clapcap`` is parsed with :mod:`ast`; every ``import`` and
``from ... import`` counts, at module level or inside a function, a method or an ``if``
block (``TYPE_CHECKING`` included), and so does ``importlib.import_module("clapcap...")``
with a literal name. A node of the package graph is a subpackage (``data``, ``clap``, ...)
or a top-level module (``config``, ``errors``, ``entry``); an edge ``a --> b`` means some
module of ``a`` imports some module of ``b``.

Usage::

    python tools/architecture.py          # rewrite the diagram in docs/architecture.md
    python tools/architecture.py --check  # exit 1 if the diagram there is not current

The output depends on the sources only (sorted nodes and edges), so ``--check`` can run in CI.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Container, Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = "clapcap"
DOC = ROOT / "docs" / "architecture.md"
BEGIN = "<!-- architecture:begin -->"
END = "<!-- architecture:end -->"

Graph = dict[str, set[str]]


def discover(src: Path = SRC) -> dict[str, Path]:
    """Map every module name under ``src/clapcap`` (``clapcap.data.dump``) to its file.

    A package is named by its ``__init__.py`` (``clapcap.data``).
    """
    out: dict[str, Path] = {}
    for path in sorted((src / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(name: str, known: Container[str]) -> str | None:
    """The longest prefix of dotted ``name`` that is a known module, else None."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        cand = ".".join(parts[:i])
        if cand in known:
            return cand
    return None


def _base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module named by ``from <node.module> import`` (relative ones resolved)."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    anchor = package[: len(package) - (node.level - 1)]
    return ".".join(anchor + ([node.module] if node.module else []))


def _literal_import_module(node: ast.Call) -> str | None:
    """``importlib.import_module("x")`` / ``import_module("x")`` with a literal name."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name != "import_module" or not node.args:
        return None
    arg = node.args[0]
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def imports_of(module: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The clapcap modules that ``module`` (file ``path``) imports, anywhere in its body.

    ``from a.b import c`` counts as an import of ``a.b.c`` when that is a module, else of
    ``a.b``. A module's own parent packages are not counted (Python imports them first,
    whoever asks), and neither is the module itself.
    """
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, is_package, node)
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                     for a in node.names]
        elif isinstance(node, ast.Call):
            literal = _literal_import_module(node)
            names = [literal] if literal else []
        for name in names:
            target = _resolve(name, known)
            if target is not None and target != module:
                found.add(target)
    return found


def module_graph(src: Path = SRC) -> Graph:
    """``{module: {imported clapcap modules}}`` for every module under ``src/clapcap``."""
    known = discover(src)
    return {name: imports_of(name, path, known) for name, path in known.items()}


def layer(module: str) -> str:
    """The package-graph node of a module: ``clapcap.data.dump`` -> ``data``,
    ``clapcap.config`` -> ``config``, the root package ``clapcap`` -> ``clapcap``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def package_graph(graph: Mapping[str, set[str]]) -> Graph:
    """Collapse a module graph onto :func:`layer` nodes; self-edges are dropped."""
    out: Graph = {}
    for src, targets in graph.items():
        out.setdefault(layer(src), set())
        for dst in targets:
            out.setdefault(layer(dst), set())
            if layer(dst) != layer(src):
                out[layer(src)].add(layer(dst))
    return out


def find_cycle(graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """One import cycle as a path ``[a, b, ..., a]``, or None when the graph is acyclic.

    Depth-first search in sorted order, so the reported cycle is deterministic.
    """
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start)
            if cycle:
                return cycle
    return None


def _label(node: str, src: Path) -> str:
    """``data/`` for a subpackage, ``config.py`` for a top-level module."""
    return f"{node}/" if (src / PACKAGE / node).is_dir() else f"{node}.py"


def mermaid(graph: Mapping[str, Iterable[str]], src: Path = SRC) -> str:
    """A Mermaid ``graph TD`` of a package graph, nodes and edges sorted.

    The root package ``clapcap`` is left out while it imports nothing and nothing imports it
    (its ``__init__`` only holds the version).
    """
    targets = {dst for dsts in graph.values() for dst in dsts}
    nodes = [n for n in sorted(graph)
             if n != PACKAGE or graph[n] or n in targets]
    lines = ["```mermaid", "graph TD"]
    lines += [f'    {node}["{_label(node, src)}"]' for node in nodes]
    lines += [f"    {a} --> {b}" for a in nodes for b in sorted(graph[a])]
    lines.append("```")
    return "\n".join(lines)


def render(doc_text: str, diagram: str) -> str:
    """``doc_text`` with the text between the markers replaced by ``diagram``.

    Raises:
        ValueError: when the markers are missing or out of order.
    """
    start, end = doc_text.find(BEGIN), doc_text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"expected the markers {BEGIN!r} then {END!r}")
    return f"{doc_text[: start + len(BEGIN)]}\n{diagram}\n{doc_text[end:]}"


def regenerate(doc: Path = DOC, src: Path = SRC) -> tuple[str, str]:
    """``doc``'s text now, and the same text with a diagram generated from ``src`` now."""
    text = doc.read_text(encoding="utf-8")
    try:
        return text, render(text, mermaid(package_graph(module_graph(src)), src))
    except ValueError as err:
        raise ValueError(f"{doc}: {err}") from None


def check(doc: Path = DOC, src: Path = SRC) -> bool:
    """True when ``doc``'s diagram equals one generated from ``src`` now."""
    text, new = regenerate(doc, src)
    return new == text


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` verify) the diagram. Returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if docs/architecture.md's diagram is not current")
    args = parser.parse_args(argv)
    rel = DOC.relative_to(ROOT)
    try:
        text, new = regenerate()
    except ValueError as err:
        sys.stderr.write(f"architecture: error: {err}\n")
        return 2
    if args.check:
        if new != text:
            sys.stderr.write(f"{rel}: the import diagram is out of date; "
                             "run `python tools/architecture.py`\n")
            return 1
        return 0
    if new != text:
        DOC.write_text(new, encoding="utf-8")
        sys.stdout.write(f"updated {rel}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
