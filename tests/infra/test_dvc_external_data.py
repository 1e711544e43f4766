"""A real dataset outside the repository is a DVC dependency through the listing stage.

The repository's own ``data_listing`` and ``prepare_data`` stage definitions run under DVC in
a temporary repository, on a tiny Clotho-format dataset kept outside it. Editing a caption,
replacing an audio file or adding one reruns ``prepare_data`` and the stage that depends on
it (and nothing else); no change reruns nothing but the listing itself.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

COUNT = """import json
info = json.load(open("data/corpus/dataset.json"))
open("count.txt", "w").write(str(info["n_clips"]))
"""


def _run(cmd, cwd, env) -> str:
    res = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, f"{cmd} failed:\n{res.stdout}\n{res.stderr}"
    return res.stdout


def _stage(name: str) -> dict:
    """The repository's stage ``name``, its script run from the repository, code deps dropped."""
    stage = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"][name]
    script = stage["cmd"].split()[1]
    stage["cmd"] = f"python {ROOT / script}"
    stage["deps"] = [d for d in stage.get("deps", []) if not d.startswith(("src/", "pipelines/", "build/code/"))]
    return stage


def _repo(tmp_path: Path, dataset: Path) -> tuple[Path, dict]:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PYTHONPATH": str(ROOT / "src"),
           "PATH": f"{BIN}:{os.environ['PATH']}", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    repo = tmp_path / "repo"
    repo.mkdir()
    _run(["git", "init", "-q"], repo, env)
    _run([str(BIN / "dvc"), "init", "-q"], repo, env)
    (repo / "count.py").write_text(COUNT)
    (repo / "other.txt").write_text("unrelated input\n")
    (repo / "params.yaml").write_text(yaml.safe_dump({"data": {
        "source": "clotho", "out_dir": "data/corpus",
        "external": {"root": str(dataset), "audio_dir": "audio", "csv": {"train": "captions.csv"}}}}))
    stages = {"data_listing": _stage("data_listing"), "prepare_data": _stage("prepare_data"),
              "count": {"cmd": "python count.py", "deps": ["count.py", "data/corpus"], "outs": ["count.txt"]},
              "other": {"cmd": "python -c \"open('other.out', 'w').write(open('other.txt').read())\"",
                        "deps": ["other.txt"], "outs": ["other.out"]}}
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": stages}, sort_keys=False))
    return repo, env


def _repro(repo: Path, env: dict) -> set[str]:
    out = _run([str(BIN / "dvc"), "repro"], repo, env)
    return set(re.findall(r"Running stage '([^']+)'", out))


def test_external_changes_rerun_prepare_and_only_its_dependents(tmp_path, make_clotho, write_wav):
    """Old pipeline: prepare_data had no dependency on the external files, so nothing reran."""
    dataset = make_clotho(tmp_path / "external")
    repo, env = _repo(tmp_path, dataset)
    assert _repro(repo, env) == {"data_listing", "prepare_data", "count", "other"}
    assert _repro(repo, env) == {"data_listing"}  # no change: only the (cheap) listing runs

    csv = dataset / "captions.csv"
    csv.write_text(csv.read_text().replace("tone number 1 variant 0", "an edited caption"))
    assert _repro(repo, env) == {"data_listing", "prepare_data", "count"}
    assert "an edited caption" in (repo / "data" / "corpus" / "manifest.csv").read_text()

    write_wav(dataset / "audio" / "clip2.wav", freq=1500.0)  # same name, size and duration
    assert _repro(repo, env) == {"data_listing", "prepare_data", "count"}

    write_wav(dataset / "audio" / "clip3.wav")
    assert _repro(repo, env) == {"data_listing", "prepare_data", "count"}
    assert _repro(repo, env) == {"data_listing"}
    listing = (repo / "data" / "listing.json").read_text()
    assert "audio/clip3.wav" in listing and str(tmp_path) not in listing
