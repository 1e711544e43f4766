"""The import architecture of ``src/clapcap``: no cycle, one-way layers, a current diagram.

Every import counts: module level, inside functions, under ``if TYPE_CHECKING:``, and
``importlib.import_module("clapcap...")`` with a literal name (``tools/architecture.py``
parses them with ``ast``). Modules are written as paths under ``src/clapcap``
(``data/dump.py``, ``tracking/__init__.py``); see docs/architecture.md.
"""

from __future__ import annotations

import subprocess
import sys
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

import pytest

import architecture  # tools/architecture.py, on pytest's pythonpath

Graph = dict[str, set[str]]

# Edges of the current tree that break a rule below, each with why it is tolerated for now.
# Each one is a debt to pay: fix the import, then delete the entry (test_exceptions_are_live
# fails once an entry no longer matches an import, so this list cannot go stale).
KNOWN_EXCEPTIONS: dict[tuple[str, str], str] = {}

INFERENCE = (
    "captioning/config.py", "captioning/model.py", "captioning/generation.py", "captioning/serving.py",
    "captioning/decoders.py", "captioning/projection.py", "captioning/tokenizer.py",
    "clap/model.py", "clap/preprocessing.py", "encoders/*",
)
TRAINING = (
    "captioning/train.py", "experiments/captioning/study.py", "experiments/captioning/lr_search.py",
    "clap/train.py", "clap/task.py", "clap/tasks.py", "clap/optim.py", "experiments/clap/variants.py",
    "robust/train.py",
)
# Data formats, the CLAP model, encoders, retrieval metrics and captioning models.
MODEL_CODE = (
    "data/*", "clap/*", "encoders/*", "retrieval/*",
    "captioning/model.py", "captioning/generation.py", "captioning/serving.py",
    "captioning/decoders.py", "captioning/projection.py", "captioning/tokenizer.py",
    "captioning/config.py", "captioning/data.py", "captioning/evaluate.py", "captioning/smollm2.py",
    "captioning/gemma3.py", "captioning/gguf_lm.py", "captioning/pretrained_lms.py",
)
EDGES = ("tracking/*", "tracked/*", "flows/*", "cli/*")
# The packages of models, their training and what they read; the studies over them live in experiments/.
MODEL_PACKAGES = ("data/*", "clap/*", "encoders/*", "retrieval/*", "captioning/*", "robust/*", "pretrained/*",
                  "paraphrase/*", "llm/*", "pairwise/*", "evaluation/*", "reference/*", "quality/*", "utils/*")


@dataclass(frozen=True)
class Rule:
    """Modules matching ``sources`` (minus ``sources_except``) must not import modules
    matching ``targets`` (minus ``targets_except``); with ``transitive``, not even through
    other modules. Patterns are :func:`fnmatch` patterns on paths under src/clapcap."""

    name: str
    sources: tuple[str, ...]
    targets: tuple[str, ...]
    sources_except: tuple[str, ...] = ()
    targets_except: tuple[str, ...] = ()
    transitive: bool = False


RULES = [
    Rule("model code never imports tracking, flows or the CLI", MODEL_CODE, EDGES, transitive=True),
    Rule("nothing but the CLI imports the CLI", ("*",), ("cli/*",), sources_except=("cli/*",)),
    Rule("nothing but the CLI imports flows", ("*",), ("flows/*",),
         sources_except=("cli/*", "flows/*")),
    Rule("only entry points import the tracked edge", ("*",), ("tracked/*",),
         sources_except=("cli/*", "flows/*", "tracked/*")),
    Rule("tracking at the edges: only tracked/, cli/ and flows/ import tracking/", ("*",), ("tracking/*",),
         sources_except=("tracking/*", "tracked/*", "cli/*", "flows/*")),
    Rule("clap/ never imports encoders/ (encoders build on clap)", ("clap/*",), ("encoders/*",),
         transitive=True),
    Rule("inference never imports training", INFERENCE, TRAINING, transitive=True),
    Rule("experiments/ is the only home of studies: no model package imports it", MODEL_PACKAGES,
         ("experiments/*",), transitive=True),
    Rule("data/ is the bottom layer: it builds on errors and utils only", ("data/*",), ("*",),
         targets_except=("data/*", "errors.py", "utils/*")),
    Rule("tracking/ is a thin MLflow wrapper: it imports only errors, utils, config", ("tracking/*",), ("*",),
         targets_except=("tracking/*", "errors.py", "utils/*", "config.py")),
]


def _matches(path: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch(path, p) for p in patterns)


def file_graph(src: Path = architecture.SRC) -> Graph:
    """The module import graph with modules written as paths under ``src/clapcap``."""
    files = {m: p.relative_to(src / architecture.PACKAGE).as_posix()
             for m, p in architecture.discover(src).items()}
    return {files[m]: {files[t] for t in ts} for m, ts in architecture.module_graph(src).items()}


def without_exceptions(graph: Mapping[str, set[str]]) -> Graph:
    return {m: {t for t in ts if (m, t) not in KNOWN_EXCEPTIONS} for m, ts in graph.items()}


def _path(graph: Mapping[str, set[str]], start: str, goal: set[str]) -> list[str] | None:
    """Shortest import chain from ``start`` to a module in ``goal`` (breadth-first)."""
    parent: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(graph.get(node, ())):
            if nxt in parent:
                continue
            parent[nxt] = node
            if nxt in goal:
                chain = [nxt]
                while parent[chain[-1]] is not None:
                    chain.append(parent[chain[-1]])
                return chain[::-1]
            queue.append(nxt)
    return None


def violations(graph: Mapping[str, set[str]], rule: Rule) -> list[str]:
    """Each offending import chain of ``rule`` in ``graph``, as ``a -> b -> c``."""
    targets = {m for m in graph
               if _matches(m, rule.targets) and not _matches(m, rule.targets_except)}
    out = []
    for src in sorted(graph):
        if not _matches(src, rule.sources) or _matches(src, rule.sources_except):
            continue
        if rule.transitive:
            chain = _path(graph, src, targets - {src})
            if chain:
                out.append(" -> ".join(chain))
        else:
            out += [f"{src} -> {dst}" for dst in sorted(graph[src] & targets) if dst != src]
    return out


@pytest.fixture(scope="module")
def graph() -> Graph:
    return file_graph()


# --- the rules on the current tree ------------------------------------------------------


def test_no_module_import_cycle(graph: Graph) -> None:
    cycle = architecture.find_cycle(without_exceptions(graph))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_package_import_cycle() -> None:
    cycle = architecture.find_cycle(architecture.package_graph(architecture.module_graph()))
    assert cycle is None, "package import cycle: " + " -> ".join(cycle or [])


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_layering(graph: Graph, rule: Rule) -> None:
    found = violations(without_exceptions(graph), rule)
    assert not found, f"{rule.name}; forbidden imports:\n  " + "\n  ".join(found)


def test_every_rule_selects_modules(graph: Graph) -> None:
    """A pattern that no longer matches (a module renamed away) would pass vacuously."""
    for rule in RULES:
        for pattern in rule.sources + rule.targets + rule.sources_except + rule.targets_except:
            assert any(fnmatch(m, pattern) for m in graph), f"{rule.name}: {pattern} matches nothing"


def test_exceptions_are_live(graph: Graph) -> None:
    for (src, dst), why in KNOWN_EXCEPTIONS.items():
        assert dst in graph.get(src, set()), (
            f"known exception {src} -> {dst} ({why}) is gone: delete it from KNOWN_EXCEPTIONS")


def test_diagram_is_current() -> None:
    assert architecture.check(), "docs/architecture.md is stale: run `python tools/architecture.py`"


def test_check_command_passes() -> None:
    run = subprocess.run([sys.executable, str(architecture.ROOT / "tools" / "architecture.py"),
                          "--check"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr


# --- the checks can fail: planted violations in a throwaway package ------------------------


def _package(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (paths under src/clapcap) into ``root/src`` and return that src dir."""
    src = root / "src"
    for rel, text in {"__init__.py": "", **files}.items():
        path = src / architecture.PACKAGE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return src


def test_every_import_form_is_seen(tmp_path: Path) -> None:
    src = _package(tmp_path, {
        "errors.py": "",
        "data/__init__.py": "",
        "data/a.py": "def f():\n    from clapcap.tracking import log\n",
        "data/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n",
        "data/c.py": "import importlib\nimportlib.import_module('clapcap.cli.x')\n",
        "data/d.py": "from ..errors import E\nimport clapcap.data.a as alias\n",
        "tracking/__init__.py": "",
        "cli/__init__.py": "",
        "cli/x.py": "",
    })
    g = file_graph(src)
    assert g["data/a.py"] == {"tracking/__init__.py"}
    assert g["data/b.py"] == {"data/a.py"}
    assert g["data/c.py"] == {"cli/x.py"}
    assert g["data/d.py"] == {"errors.py", "data/a.py"}


def test_planted_cycle_is_reported(tmp_path: Path) -> None:
    src = _package(tmp_path, {
        "a.py": "import clapcap.b\n",
        "b.py": "def f():\n    from clapcap import c\n",
        "c.py": "from clapcap.a import x\n",
    })
    assert architecture.find_cycle(file_graph(src)) == ["a.py", "b.py", "c.py", "a.py"]


def test_planted_forbidden_imports_are_reported(tmp_path: Path) -> None:
    src = _package(tmp_path, {
        "clap/__init__.py": "",
        "clap/model.py": "def load():\n    from clapcap.clap import helper\n",
        "clap/helper.py": "import clapcap.clap.train\n",
        "clap/train.py": "from clapcap import tracking\n",
        "tracking/__init__.py": "",
        "encoders/__init__.py": "",
        "cli/__init__.py": "",
        "flows/__init__.py": "import clapcap.cli\n",
        "robust/__init__.py": "",
        "robust/train.py": "def fit():\n    from clapcap.experiments.robust import seeds\n",
        "experiments/__init__.py": "",
        "experiments/robust/__init__.py": "",
        "experiments/robust/seeds.py": "import clapcap.robust.train\n",
    })
    g = file_graph(src)
    by_name = {r.name: violations(g, r) for r in RULES}
    assert by_name["experiments/ is the only home of studies: no model package imports it"] == [
        "robust/train.py -> experiments/robust/seeds.py"]
    assert by_name["inference never imports training"] == [
        "clap/model.py -> clap/helper.py -> clap/train.py"]
    assert by_name["nothing but the CLI imports the CLI"] == ["flows/__init__.py -> cli/__init__.py"]
    assert "clap/helper.py -> clap/train.py -> tracking/__init__.py" in by_name[
        "model code never imports tracking, flows or the CLI"]


def test_stale_diagram_is_reported(tmp_path: Path) -> None:
    src = _package(tmp_path, {"errors.py": "", "config.py": "from clapcap.errors import E\n"})
    doc = tmp_path / "architecture.md"
    doc.write_text(f"# x\n{architecture.BEGIN}\nold\n{architecture.END}\n")
    assert not architecture.check(doc, src)
    _, new = architecture.regenerate(doc, src)
    doc.write_text(new)
    assert architecture.check(doc, src)
    assert "config --> errors" in new


def test_every_module_stays_under_500_lines():
    """A module past 500 lines holds more than one concern (STYLE.md): split it by concern."""
    src = Path(architecture.SRC)
    long = {str(p.relative_to(src)): n for p in sorted((src / "clapcap").rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500}
    assert not long, f"modules over 500 lines: {long}"
