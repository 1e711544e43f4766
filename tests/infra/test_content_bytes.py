"""Bytes depend on content only: two copies of the project in different folders, made at
different times, build byte-identical stage outputs and agree on every cache key."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]

PARAMS = """data:
  synthetic: {n_clips: 30, seed: 3, min_duration_s: 1.0, max_duration_s: 2.0}
"""
STAGES = ("data_listing", "prepare_data", "validate_data")
GX_PROJECT = "reports/data/great_expectations/"
GX_INDEX = GX_PROJECT + "gx/uncommitted/data_docs/local_site/index.html"


def _checkout(where: Path, mtime: int) -> Path:
    """A copy of the stage scripts and a small params.yaml, every file stamped ``mtime``."""
    shutil.copytree(REPO_ROOT / "pipelines", where / "pipelines")
    (where / "params.yaml").write_text(PARAMS)
    for path in where.rglob("*"):
        os.utime(path, ns=(mtime, mtime))
    return where


def _run_stages(root: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH")) if p)}
    stages = yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text())["stages"]
    for stage in STAGES:  # each stage's own command from dvc.yaml, with its arguments
        program, *args = shlex.split(stages[stage]["cmd"])
        assert program == "python", stages[stage]["cmd"]
        subprocess.run([sys.executable, *args], cwd=root, env=env, check=True, capture_output=True, timeout=300)


def _files(root: Path, *folders: str) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for folder in folders for p in sorted((root / folder).rglob("*")) if p.is_file()}


def test_two_checkouts_build_identical_bytes(tmp_path, monkeypatch):
    from clapcap.clap.config import TrainClapParams
    from clapcap.clap.train import run_signature
    from clapcap.data.prepare import dataset_fingerprint
    from clapcap.encoders.base import EncoderConfig
    from clapcap.encoders.embed import embed_dataset

    a = _checkout(tmp_path / "a", 1_000_000_000_000_000_000)
    b = _checkout(tmp_path / "elsewhere" / "deeper" / "b", 1_700_000_000_000_000_000)
    for root in (a, b):
        _run_stages(root)
        os.utime(root / "data" / "corpus" / "manifest.csv", ns=(root.stat().st_mtime_ns,) * 2)
        monkeypatch.chdir(root)  # as a stage runs: relative paths from the repository root
        embed_dataset(EncoderConfig(name="tiny", batch_size=8), "data/corpus", "test",
                      "data/embeddings/test.npz", progress=False)
    files_a, files_b = _files(a, "data", "reports"), _files(b, "data", "reports")
    # great-expectations' own file project (validate_data's Data Docs) holds GX's run times and
    # random ids by design: it is built in both, and left out of the byte comparison.
    for files in (files_a, files_b):
        assert GX_INDEX in files
        for key in [k for k in files if k.startswith(GX_PROJECT)]:
            del files[key]
    assert files_a.keys() == files_b.keys() and "data/embeddings/test.npz" in files_a
    differing = [name for name in files_a if files_a[name] != files_b[name]]
    assert differing == []
    assert all(str(tmp_path).encode() not in content for content in files_a.values())
    assert dataset_fingerprint(a / "data" / "corpus") == dataset_fingerprint(b / "data" / "corpus")
    params = TrainClapParams()
    assert run_signature(params, a / "data" / "corpus") == run_signature(params, b / "data" / "corpus")
