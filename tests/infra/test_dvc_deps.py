"""Every DVC stage's code deps are derived from what its script can import (clapcap.code_deps).

Each stage (but ``code_fingerprints``, which writes them) depends on ``build/code/<stage>.json``
and on no hand-written source path; the fingerprint covers the script's whole import closure
(lazy imports too) and the package data it ships; comments and docstrings do not change it,
code does. Otherwise `dvc repro` would keep a stale result after that code changes, or rerun
stages for an edit that cannot change them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clapcap.code_deps import (
    FINGERPRINT_STAGE,
    code_hash,
    fingerprint,
    fingerprint_path,
    import_closure,
    stage_scripts,
    write_fingerprints,
)

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"


def _stages() -> dict[str, dict]:
    return {name: stage.get("do", stage)
            for name, stage in yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"].items()}


def test_every_stage_depends_on_its_fingerprint_and_on_no_hand_written_code():
    bad = {}
    for name, body in _stages().items():
        deps = [str(d) for d in body.get("deps", [])]
        if name == FINGERPRINT_STAGE:
            assert body.get("always_changed") is True and not deps
            continue
        hand = [d for d in deps if d.startswith("src/") or d.startswith("pipelines/")]
        if fingerprint_path(name) not in deps or hand:
            bad[name] = {"fingerprint": fingerprint_path(name) in deps, "hand_written": hand}
    assert not bad, f"stages whose code deps are not derived: {bad}"


def test_every_stage_fingerprint_covers_its_import_closure():
    scripts = stage_scripts(ROOT)
    assert scripts["train_clap"] == "pipelines/train_clap.py"
    for name, script in scripts.items():
        files = set(fingerprint(ROOT, script)["files"])
        closure = {str(f.relative_to(ROOT)) for f in import_closure(ROOT / script, SRC)}
        assert script in files and closure <= files, name
    # The report reads the AudioCaps leaderboard that ships inside clapcap.reporting.
    assert "src/clapcap/reporting/data/audiocaps_t2a_leaderboard.csv" in fingerprint(ROOT, scripts["report"])["files"]


def test_the_closure_sees_lazy_imports(tmp_path):
    script = tmp_path / "stage.py"
    script.write_text("def main():\n    from clapcap.data.csv_reader import read_text_table\n")
    files = import_closure(script, SRC)
    assert SRC / "clapcap/data/csv_reader.py" in files
    assert SRC / "clapcap/data/__init__.py" in files
    assert SRC / "clapcap/experiments/captioning/study.py" not in files


def _mini_project(tmp_path: Path) -> Path:
    (tmp_path / "src/clapcap/lib").mkdir(parents=True)
    (tmp_path / "src/clapcap/__init__.py").write_text("")
    (tmp_path / "src/clapcap/lib/__init__.py").write_text("")
    (tmp_path / "src/clapcap/lib/a.py").write_text('"""Doc."""\n\ndef f(x):\n    """Doc."""\n    return x + 1  # one\n')
    (tmp_path / "src/clapcap/lib/b.py").write_text("def g():\n    return 2\n")
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines/s1.py").write_text("from clapcap.lib.a import f\n")
    (tmp_path / "pipelines/s2.py").write_text("from clapcap.lib import b\n")
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": {
        "s1": {"cmd": "python pipelines/s1.py", "deps": ["build/code/s1.json"]},
        "s2": {"do": {"cmd": "python pipelines/s2.py --x ${item}"}, "foreach": [1, 2]}}}))
    return tmp_path


def test_comments_and_docstrings_do_not_change_a_fingerprint_and_code_does(tmp_path):
    root = _mini_project(tmp_path)
    assert sorted(p.name for p in write_fingerprints(root)) == ["s1.json", "s2.json"]
    first = {p.name: p.read_text() for p in (root / "build/code").glob("*.json")}
    a = root / "src/clapcap/lib/a.py"
    a.write_text('"""Another doc, longer."""\n\n\ndef f(x):\n    """Other."""\n    # a comment\n    return x + 1\n')
    assert write_fingerprints(root) == []
    assert {p.name: p.read_text() for p in (root / "build/code").glob("*.json")} == first
    a.write_text("def f(x):\n    return x + 2\n")
    assert [p.name for p in write_fingerprints(root)] == ["s1.json"]  # s2 does not import a.py
    # Every version is kept by its MD5 (what dvc.lock records), for the refactor check.
    from clapcap.code_deps import recorded_fingerprint

    kept = {p.stem for p in (root / "build/code/history").glob("*.json")}
    assert len(kept) == 3  # s1 twice, s2 once
    for md5 in kept:
        assert recorded_fingerprint(root, md5)["script"] in ("pipelines/s1.py", "pipelines/s2.py")
    data = json.loads((root / "build/code/s1.json").read_text())
    assert set(data["files"]) == {"pipelines/s1.py", "src/clapcap/__init__.py", "src/clapcap/lib/__init__.py",
                                  "src/clapcap/lib/a.py"}


def test_a_string_literal_that_is_not_a_docstring_counts(tmp_path):
    f = tmp_path / "m.py"
    f.write_text('def f():\n    x = 1\n    "not a docstring"\n    return x\n')
    before = code_hash(f)
    f.write_text('def f():\n    x = 1\n    "changed"\n    return x\n')
    assert code_hash(f) != before


def test_a_stage_command_that_is_not_a_pipeline_script_is_refused(tmp_path):
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"x": {"cmd": "bash run.sh"}}}))
    with pytest.raises(ValueError, match="stage x: expected `python pipelines/"):
        stage_scripts(tmp_path)


def test_the_stage_script_writes_the_fingerprints(tmp_path):
    root = _mini_project(tmp_path)
    (root / "pipelines/code_fingerprints.py").write_text((ROOT / "pipelines/code_fingerprints.py").read_text())
    out = subprocess.run([sys.executable, "pipelines/code_fingerprints.py"], cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "2 changed" in out.stdout
    assert sorted(p.name for p in (root / "build/code").glob("*.json")) == ["s1.json", "s2.json"]


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
        foreach = stage.get("foreach")
        if isinstance(foreach, str) and foreach.startswith("${") and any("${key}" in k for k in keys):
            # A foreach over a dict of params: each generated stage names its own key.
            tree = params
            for part in foreach[2:-1].split("."):
                tree = tree[part]
            keys = [k.replace("${key}", item) for k in keys for item in (tree if "${key}" in k else [""])]
        elif isinstance(foreach, dict):  # a dict written in dvc.yaml itself
            keys = [k.replace("${key}", item) for k in keys for item in (foreach if "${key}" in k else [""])]
        if isinstance(foreach, str) and foreach.startswith("${") and any("${item}" in k for k in keys):
            # A foreach over a list of params: each generated stage names its own item.
            tree = params
            for part in foreach[2:-1].split("."):
                tree = tree[part]
            keys = [k.replace("${item}", str(item)) for k in keys for item in (tree if "${item}" in k else [""])]
        absent = [k for k in keys if not _has_key(params, k)]
        if absent:
            missing[name] = absent
    assert not missing, f"stage params missing from params.yaml: {missing}"
