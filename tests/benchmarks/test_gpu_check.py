"""benchmarks/gpu_check.py (make gpu-check): a clean refusal without CUDA, and its pieces on CPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "HF_HUB_OFFLINE": "1"}  # no GPU, also on a GPU machine
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env,
                          timeout=600)


def test_refuses_cleanly_without_cuda():
    out = _run()
    assert out.returncode == 2
    assert "gpu_check: CUDA is not available on this machine" in out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""


@pytest.mark.slow
def test_tiny_run_prints_every_figure_on_cpu():
    out = _run("--tiny", "--clips", "4", "--steps", "1", "--batch-size", "2")
    assert out.returncode == 0, out.stderr
    for figure in ("device: cpu", "train step, batch 2, fp32:", "embedding: project encoder",
                   "max |diff| 0.00e+00", "embedding bf16: project encoder", "retrieval metrics 250x50x16:"):
        assert figure in out.stdout
