"""The command line lists every verb and reports bad input without a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from clapcap.cli import main

BIN = Path(sys.executable).parent


def test_help_lists_groups():
    out = subprocess.run([str(BIN / "clapcap"), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "data" in out.stdout


def test_data_validate_reports_violation(tiny_corpus, tmp_path, capsys):
    params = tmp_path / "params.yaml"
    params.write_text(f"data:\n  out_dir: {tiny_corpus}\n  max_duration_s: 3.0\n  synthetic: {{n_clips: 40, seed: 1, "
                      "min_duration_s: 2.0, max_duration_s: 4.0, music_fraction: 0.2}\n")
    assert main(["data", "validate", "--params", str(params), "--report-dir", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err
    assert "clapcap: error: data validation failed" in err and "duration_s" in err


def test_unknown_param_key_is_a_clean_error(tmp_path, capsys):
    params = tmp_path / "params.yaml"
    params.write_text("data:\n  n_clip: 3\n")
    assert main(["data", "prepare", "--params", str(params)]) == 2
    assert f"clapcap: error: {params}:2: unknown key(s) data.n_clip" in capsys.readouterr().err
