"""A temporary git + DVC repository for tests that drive the real `dvc` command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
DVC = [sys.executable, "-m", "dvc"]


def run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> str:
    """Run ``args`` in ``cwd``; fail the test with the tail of its output when it fails."""
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{' '.join(args)}:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    return out.stdout


def dvc_env(tracking_uri: str, **extra: str) -> dict[str, str]:
    """The environment of a `dvc` subprocess: this checkout's src on PYTHONPATH, this venv's
    `python` first on PATH (stage commands call `python`), the MLflow store, no prompts."""
    bindir = str(Path(sys.executable).parent)
    return {**os.environ, "MLFLOW_TRACKING_URI": tracking_uri, "DVC_NO_ANALYTICS": "1", "GIT_TERMINAL_PROMPT": "0",
            "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
            "PATH": os.pathsep.join([bindir, os.environ.get("PATH", "")]), **extra}


def init_repo(root: Path, params: dict[str, Any], stages: dict[str, Any], env: dict[str, str], message: str) -> None:
    """Write ``params.yaml`` and ``dvc.yaml`` into ``root`` (its other files already there),
    then `git init`, `dvc init` and commit everything."""
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    (root / "dvc.yaml").write_text(yaml.safe_dump({"stages": stages}))
    (root / ".gitignore").write_text("mlruns/\n")
    for cmd in (["git", "init", "-q"], ["git", "config", "user.email", "t@example.org"],
                ["git", "config", "user.name", "t"], [*DVC, "init", "-q"]):
        run(cmd, root, env)
    run(["git", "add", "-A"], root, env)
    run(["git", "commit", "-qm", message], root, env)
