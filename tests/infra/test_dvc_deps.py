"""Every DVC stage lists, among its deps, the library code its script can run.

For each stage the script's ``clapcap`` imports are followed transitively (every
``import``/``from`` statement, including those inside functions); each module file reached
must be a dep of the stage or lie under a dep folder. Otherwise `dvc repro` would keep a
stale result after that code changes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"


def _module_file(name: str) -> Path | None:
    base = SRC.joinpath(*name.split("."))
    for cand in (base / "__init__.py", base.with_suffix(".py")):
        if cand.is_file():
            return cand
    return None


def _clapcap_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return {n for n in names if n.split(".")[0] == "clapcap"}


def import_closure(script: Path) -> set[str]:
    """Repository-relative paths of every clapcap module file ``script`` can import."""
    found: set[Path] = set()
    todo = [script]
    while todo:
        for name in _clapcap_imports(todo.pop()):
            parts = name.split(".")
            for i in range(1, len(parts) + 1):  # a module imports its parent packages too
                f = _module_file(".".join(parts[:i]))
                if f is not None and f not in found:
                    found.add(f)
                    todo.append(f)
    return {str(f.relative_to(ROOT)) for f in found}


def _stages() -> dict[str, tuple[str, list[str]]]:
    out = {}
    for name, stage in yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"].items():
        body = stage.get("do", stage)
        out[name] = (body["cmd"], [str(d) for d in body.get("deps", [])])
    return out


def inert(path: Path) -> bool:
    """A package ``__init__.py`` holding only a docstring and constant assignments: no code to track."""
    if path.name != "__init__.py":
        return False
    body = ast.parse(path.read_text()).body
    return all(isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
               or isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) for n in body)


def uncovered(files: set[str], deps: list[str]) -> list[str]:
    return sorted(f for f in files if not inert(ROOT / f)
                  and not any(f == d or f.startswith(d.rstrip("/") + "/") for d in deps))


def test_inert_means_no_code():
    assert inert(SRC / "clapcap" / "__init__.py")
    assert not inert(SRC / "clapcap" / "config.py")


def test_every_stage_depends_on_the_code_it_imports():
    missing = {}
    for name, (cmd, deps) in _stages().items():
        script = cmd.split()[1]
        assert script in deps, f"stage {name}: its script {script} is not a dep"
        gaps = uncovered(import_closure(ROOT / script), deps)
        if gaps:
            missing[name] = gaps
    assert not missing, f"stages missing code deps: {missing}"


def test_the_check_sees_lazy_imports_and_reports_gaps(tmp_path):
    script = tmp_path / "stage.py"
    script.write_text("def main():\n    from clapcap.data.csv_reader import read_text_table\n")
    files = import_closure(script)
    assert "src/clapcap/data/csv_reader.py" in files
    assert uncovered(files, ["src/clapcap/utils", "src/clapcap/errors.py"]) == ["src/clapcap/data/csv_reader.py"]
    assert uncovered(files, ["src/clapcap"]) == []


def _has_key(tree: object, dotted: str) -> bool:
    for part in dotted.split("."):
        if not isinstance(tree, dict) or part not in tree:
            return False
        tree = tree[part]
    return True


def test_every_stage_param_exists_in_params_yaml():
    """DVC refuses to run a stage whose ``params:`` names a key missing from params.yaml
    (a default that lives only in code), and only says so when that stage runs."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    missing = {}
    for name, stage in yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"].items():
        body = stage.get("do", stage)
        keys = [k for k in body.get("params", []) if isinstance(k, str)]
        absent = [k for k in keys if not _has_key(params, k)]
        if absent:
            missing[name] = absent
    assert not missing, f"stage params missing from params.yaml: {missing}"
