"""The GitHub workflow: the design card's gates as their own jobs, least privilege, pinned
actions, timeouts, artifacts; and the zizmor audit that `make lint` runs can fail."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def test_gates_first_then_suites_each_with_a_timeout():
    jobs = _workflow()["jobs"]
    assert {"metric-parity", "leakage-check", "lint", "test", "services", "distributed", "engine"} <= set(jobs)
    for name in ("test", "services", "distributed", "engine"):
        assert set(jobs[name]["needs"]) == {"metric-parity", "leakage-check"}, name
    assert all(0 < job["timeout-minutes"] <= 40 for job in jobs.values())
    run = "\n".join(s.get("run", "") for s in jobs["metric-parity"]["steps"])
    assert "clapcap retrieval parity" in run and "test_parity.py" in run
    assert any(s.get("run") == "make test" for s in jobs["test"]["steps"])


def test_least_privilege_and_pinned_actions():
    wf = _workflow()
    assert wf["permissions"] == {"contents": "read"}
    assert wf["concurrency"]["cancel-in-progress"] is True
    for name, job in wf["jobs"].items():
        for step in job["steps"]:
            if "uses" not in step:
                continue
            assert re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40}", step["uses"]), f"{name}: {step['uses']} not pinned"
            if step["uses"].startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False, name
            if step["uses"].startswith("actions/upload-artifact@"):
                assert step["if"] == "always()", name


def test_zizmor_flags_a_planted_unpinned_action(tmp_path):
    zizmor = shutil.which("zizmor", path=str(Path(sys.executable).parent))
    assert zizmor, "zizmor is a dev dependency (make setup installs it)"
    ok = subprocess.run([zizmor, "--offline", "--quiet", str(WORKFLOW)], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\npermissions: write-all\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
                   "      - uses: actions/checkout@v4\n")
    run = subprocess.run([zizmor, "--offline", "--quiet", str(bad)], capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and ("unpinned" in run.stdout or "excessive" in run.stdout), run.stdout
