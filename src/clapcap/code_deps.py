"""Each DVC stage's code, derived from what its script can import, fingerprinted by meaning.

Stage code deps used to be hand-written paths in dvc.yaml (436 of them, 24 % more files than
the stages import, and folder deps, so that a docstring edit in ``captioning/`` reran 24 of 48
stages). Now the always-run stage ``code_fingerprints`` writes one file per stage,
``build/code/<stage>.json``, and each stage depends on its own file only:

- **which files**: the stage script (the ``python pipelines/<x>.py`` of its ``cmd``) and every
  ``clapcap`` module it can import, followed transitively through every ``import`` and
  ``from ... import`` statement (also inside functions and under ``if TYPE_CHECKING:``), a
  module's parent packages included, plus the data files that ship inside a package reached
  (``reporting/data/*.csv``: any non-Python file in the package folder, outside subpackages);
- **what of each file**: a SHA-256 of its syntax tree with docstrings removed
  (``ast.dump`` without line numbers), so comments, docstrings, blank lines and formatting do
  not change a fingerprint, and any change to code does. A data file is hashed byte for byte.

A stage reruns when its fingerprint file changes, i.e. when the code it can run changes. DVC
itself compares the file's hash, so a plain ``dvc repro`` is as honest as ``make repro``.
What this does not see: code reached by a name in a string (MLflow's ``loader_module``,
``importlib.import_module`` with a computed name) and behaviour read from a docstring (a
script's ``--help`` text, which changes no result).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

FINGERPRINT_DIR = "build/code"
FINGERPRINT_STAGE = "code_fingerprints"
HISTORY = "history"  # build/code/history/<md5>.json: every fingerprint written, by its MD5
# Bump when the normalization below changes: every fingerprint then changes with it.
NORMALIZATION = "ast-nodoc-v1"
PACKAGE = "clapcap"


def module_file(src: Path, name: str) -> Path | None:
    """The file of module ``name`` (dotted) under ``src``: its package ``__init__.py`` or ``.py``."""
    base = src.joinpath(*name.split("."))
    for cand in (base / "__init__.py", base.with_suffix(".py")):
        if cand.is_file():
            return cand
    return None


def _stamp(path: Path) -> tuple[Path, int, int]:
    st = path.stat()
    return path, st.st_mtime_ns, st.st_size


def clapcap_imports(path: Path) -> frozenset[str]:
    """Dotted names of ``clapcap`` modules (or names in them) that ``path`` imports anywhere."""
    return _imports(*_stamp(path))


@functools.cache  # keyed by the file's modification time and size: an edited file is read again
def _imports(path: Path, _mtime: int, _size: int) -> frozenset[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return frozenset(n for n in names if n.split(".")[0] == PACKAGE)


def import_closure(script: Path, src: Path) -> set[Path]:
    """Every ``clapcap`` module file under ``src`` that ``script`` can import, directly or not."""
    found: set[Path] = set()
    todo = [script]
    while todo:
        for name in clapcap_imports(todo.pop()):
            parts = name.split(".")
            for i in range(1, len(parts) + 1):  # a module imports its parent packages too
                f = module_file(src, ".".join(parts[:i]))
                if f is not None and f not in found:
                    found.add(f)
                    todo.append(f)
    return found


def package_data(modules: Iterable[Path]) -> set[Path]:
    """Non-Python files inside the folders of the packages among ``modules`` (not in subpackages)."""
    found: set[Path] = set()
    for init in (m for m in modules if m.name == "__init__.py"):
        todo = [init.parent]
        while todo:
            for p in todo.pop().iterdir():
                if p.is_dir():
                    if p.name != "__pycache__" and not (p / "__init__.py").is_file():
                        todo.append(p)
                elif p.suffix not in (".py", ".pyc"):
                    found.add(p)
    return found


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def code_hash(path: Path) -> str:
    """SHA-256 of ``path``'s syntax tree without docstrings (a ``.py`` file), else of its bytes."""
    return _code_hash(*_stamp(path))


@functools.cache
def _code_hash(path: Path, _mtime: int, _size: int) -> str:
    if path.suffix != ".py":
        return hashlib.sha256(path.read_bytes()).hexdigest()
    tree = _strip_docstrings(ast.parse(path.read_text(), filename=str(path)))
    return hashlib.sha256(ast.dump(tree, include_attributes=False).encode()).hexdigest()


def stage_scripts(root: Path) -> dict[str, str]:
    """Stage name (as written in dvc.yaml, before foreach/matrix expansion) -> its script.

    Raises:
        ValueError: naming a stage whose ``cmd`` is not ``python pipelines/<script>.py ...``.
    """
    import yaml

    scripts = {}
    for name, stage in yaml.safe_load((root / "dvc.yaml").read_text())["stages"].items():
        cmd = str(stage.get("do", stage)["cmd"]).split()
        if len(cmd) < 2 or cmd[0] != "python" or not cmd[1].startswith("pipelines/") or not cmd[1].endswith(".py"):
            raise ValueError(f"dvc.yaml: stage {name}: expected `python pipelines/<script>.py ...`, "
                             f"found {' '.join(cmd)!r}")
        scripts[name] = cmd[1]
    return scripts


def fingerprint(root: Path, script: str) -> dict[str, Any]:
    """The fingerprint of ``script`` (relative to ``root``): each file it can run, with its :func:`code_hash`."""
    root = root.resolve()
    path = root / script
    if not path.is_file():
        raise FileNotFoundError(f"{script}: no such stage script")
    modules = import_closure(path, root / "src")
    files = {path, *modules, *package_data(modules)}
    return {"script": script, "normalization": NORMALIZATION,
            "files": {str(f.relative_to(root)): code_hash(f) for f in sorted(files)}}


def fingerprint_path(stage: str) -> str:
    return f"{FINGERPRINT_DIR}/{stage}.json"


def write_fingerprints(root: str | Path = ".", out_dir: str | Path | None = None) -> list[Path]:
    """Write ``build/code/<stage>.json`` for every stage of ``root/dvc.yaml`` but this one's own;
    a file whose content is unchanged is left as it is, and the file of a stage that is gone is
    removed. Returns the files written."""
    root = Path(root)
    out = root / (out_dir or FINGERPRINT_DIR)
    out.mkdir(parents=True, exist_ok=True)
    scripts = {k: v for k, v in stage_scripts(root).items() if k != FINGERPRINT_STAGE}
    for old in out.glob("*.json"):
        if old.stem not in scripts:
            old.unlink()
    history = out / HISTORY
    history.mkdir(exist_ok=True)
    written = []
    for stage, script in scripts.items():
        text = json.dumps(fingerprint(root, script), indent=1, sort_keys=True) + "\n"
        path = out / f"{stage}.json"
        # Every version by its MD5 (the hash dvc.lock records for the dep), so that the
        # refactor check can tell which files changed since the locked version.
        kept = history / f"{hashlib.md5(text.encode()).hexdigest()}.json"  # noqa: S324 - DVC's own hash
        if not kept.is_file():
            kept.write_text(text)
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            written.append(path)
    return written


def recorded_fingerprint(root: str | Path, md5: str) -> dict[str, Any] | None:
    """The fingerprint whose file had MD5 ``md5`` (as ``dvc.lock`` records it), if it was kept."""
    path = Path(root) / FINGERPRINT_DIR / HISTORY / f"{md5}.json"
    return json.loads(path.read_text()) if path.is_file() else None
