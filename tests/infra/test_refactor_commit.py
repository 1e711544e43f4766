"""``clapcap pipeline refactor-commit``: a canary rerun, then ``dvc commit`` of the rest (clapcap.refactor)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clapcap.refactor import NotACodeChange, changed_files, choose_canary, classify, refactor_commit

ROOT = Path(__file__).resolve().parents[2]
DVC = [str(Path(sys.executable).with_name("dvc"))]


def test_classify_keeps_only_stages_whose_one_change_is_their_code():
    status = {
        "code_fingerprints": ["always changed"],
        "a": [{"changed deps": {"build/code/a.json": "modified"}}],
        "b@1": [{"changed deps": {"build/code/b.json": "new"}}],
        "c": [{"changed deps": {"build/code/c.json": "modified", "params.yaml": {"x": "modified"}}}],
        "d": [{"changed outs": {"out/d": "deleted"}}],
        "e": [{"changed deps": {"build/code/e.json": "modified"}}, "changed command"],
    }
    code, other = classify(status)
    assert code == ["a", "b@1"]
    assert set(other) == {"c", "d", "e"} and "params.yaml" in other["c"] and "changed command" in other["e"]


def test_the_canary_covers_every_changed_file_cheaply():
    files = {"big": {"x", "y", "z"}, "small_x": {"x"}, "small_yz": {"y", "z"}, "other": {"y"}}
    seconds = {"big": 400.0, "small_x": 5.0, "small_yz": 10.0, "other": 50.0}
    assert sorted(choose_canary(files, seconds)) == ["small_x", "small_yz"]
    assert choose_canary({}, {}) == []
    old = {"normalization": "n", "files": {"a": "1", "b": "2"}}
    assert changed_files(old, {"normalization": "n", "files": {"a": "1", "b": "3", "c": "4"}}) == {"b", "c"}
    assert changed_files(None, old) == {"a", "b"}


SHARED = "def helper():\n    return {}\n"


def _project(tmp_path: Path) -> Path:
    """A DVC project of two stages whose scripts import one shared clapcap module (never run)."""
    (tmp_path / "src/clapcap/lib").mkdir(parents=True)
    (tmp_path / "src/clapcap/__init__.py").write_text("")
    (tmp_path / "src/clapcap/lib/__init__.py").write_text("")
    (tmp_path / "src/clapcap/lib/shared.py").write_text(SHARED)
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines/code_fingerprints.py").write_text((ROOT / "pipelines/code_fingerprints.py").read_text())
    for name, value in (("one", 1), ("two", 2)):
        (tmp_path / f"pipelines/{name}.py").write_text(
            "import pathlib\n\n\ndef _lazy():\n    from clapcap.lib import shared\n\n\n"
            f"pathlib.Path('out_{name}.txt').write_text('{value}')\n"
            f"with open('runs.log', 'a') as fh:\n    fh.write('{name}\\n')\n"
            # resume state a rerun rewrites (as the judges' vote store): persisted, never compared
            f"with open('state_{name}.log', 'a') as fh:\n    fh.write('run\\n')\n")
    (tmp_path / "params.yaml").write_text("x: 1\n")
    stages = {"code_fingerprints": {"cmd": "python pipelines/code_fingerprints.py", "always_changed": True,
                                    "outs": [{"build/code": {"cache": False, "persist": True}}]}}
    for name in ("one", "two"):
        stages[name] = {"cmd": f"python pipelines/{name}.py", "deps": [f"build/code/{name}.json"],
                        "params": ["x"],
                        "outs": [f"out_{name}.txt", {f"state_{name}.log": {"cache": False, "persist": True}}]}
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": stages}, sort_keys=False))
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports/build_times.json").write_text('{"known": {"one": 5.0, "two": 50.0}}')
    for cmd in (["init", "--no-scm", "-q"], ["repro", "-q"]):
        run = subprocess.run([*DVC, *cmd], cwd=tmp_path, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
    return tmp_path


def _status(root: Path) -> str:
    return subprocess.run([*DVC, "status"], cwd=root, capture_output=True, text=True).stdout


@pytest.mark.timeout(300)
def test_a_refactor_is_committed_after_the_canary_and_a_behaviour_change_is_not(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")  # stage commands call `python`
    root = _project(tmp_path)
    said: list[str] = []
    # A comment and a docstring: no stage changed.
    (root / "src/clapcap/lib/shared.py").write_text('"""Doc."""\n\n# note\n' + SHARED)
    assert refactor_commit(root, say=said.append).code_stages == []
    # A code change in the shared module that alters no output: the cheaper stage is the
    # canary, the other is committed without running.
    (root / "src/clapcap/lib/shared.py").write_text("def helper():\n    return {'a': 1}\n")
    result = refactor_commit(root, say=said.append)
    assert result.ok, said
    assert result.code_stages == ["one", "two"] and result.canary == ["one"] and result.committed == ["two"]
    assert any("persisted output(s) rewritten, not compared" in line and "state_one.log" in line for line in said)
    assert (root / "runs.log").read_text().split() == ["one", "two", "one"]  # two did not rerun
    assert "one" not in _status(root) and "two" not in _status(root)
    # A change to stage two's own script only: two alone changed, so two is the canary.
    script2 = root / "pipelines/two.py"
    script2.write_text(script2.read_text().replace("import pathlib\n", "import pathlib\n\nUNUSED = 1\n"))
    result = refactor_commit(root, say=said.append)
    assert result.ok and result.code_stages == ["two"] and result.canary == ["two"], said
    # A change to what stage one writes: its canary output differs, nothing is committed.
    script = root / "pipelines/one.py"
    script.write_text(script.read_text().replace("write_text('1')", "write_text('changed')"))
    (root / "src/clapcap/lib/shared.py").write_text("def helper():\n    return {'b': 2}\n")
    said.clear()
    result = refactor_commit(root, say=said.append)
    assert not result.ok and result.changed_outputs == {"one": ["out_one.txt"]} and result.committed == []
    assert "two" in _status(root)
    assert any("run make repro" in line for line in said)
    # A params change is not a refactor.
    (root / "params.yaml").write_text("x: 2\n")
    with pytest.raises(NotACodeChange, match="params.yaml"):
        refactor_commit(root, say=said.append)


@pytest.mark.timeout(300)
def test_moved_params_are_admitted_only_as_canaries_that_reproduce_their_outputs(tmp_path, monkeypatch):
    """Params moved under a new key (the optim block): refused by default; with rerun_params
    each stage whose params changed reruns, and its outputs decide."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    root = _project(tmp_path)
    # Stage one writes its param: a moved key keeps the value, a changed value changes the output.
    one = root / "pipelines/one.py"
    one.write_text(one.read_text().replace("write_text('1')", "write_text(str(__import__('yaml').safe_load("
                                                               "open('params.yaml'))['b']['x']))"))
    said: list[str] = []
    (root / "params.yaml").write_text("b:\n  x: 1\n")
    spec = yaml.safe_load((root / "dvc.yaml").read_text())
    for name in ("one", "two"):
        spec["stages"][name]["params"] = ["b.x"]
    (root / "dvc.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    with pytest.raises(NotACodeChange, match="params.yaml"):
        refactor_commit(root, say=said.append)
    with pytest.raises(NotACodeChange, match=r"\['two'\] changed params: they must be canaries"):
        refactor_commit(root, say=said.append, rerun_params=True, canary=["one"])
    result = refactor_commit(root, say=said.append, rerun_params=True)
    assert result.ok, said
    assert sorted(result.canary) == ["one", "two"] and result.committed == []
    assert any("one: params or resume state changed" in line for line in said)
    assert (root / "out_one.txt").read_text() == "1" and "one" not in _status(root)
    # Resume state removed (to retrain from scratch): refused by default, rerun with rerun_params.
    (root / "src/clapcap/lib/shared.py").write_text("def helper():\n    return {'c': 3}\n")
    (root / "state_two.log").unlink()
    with pytest.raises(NotACodeChange, match="resume state"):
        refactor_commit(root, say=said.append)
    result = refactor_commit(root, say=said.append, rerun_params=True)
    assert result.ok and result.canary[0] == "two" and (root / "state_two.log").is_file(), said
    # A changed value is a changed result: stage one's canary differs, nothing is committed.
    (root / "params.yaml").write_text("b:\n  x: 5\n")
    result = refactor_commit(root, say=said.append, rerun_params=True)
    assert not result.ok and result.changed_outputs == {"one": ["out_one.txt"]}
