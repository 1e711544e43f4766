"""No committed output holds a machine path: output bytes depend on content only (STYLE.md), so a
rebuild elsewhere writes the same files. Scans every file git tracks under the output folders."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from clapcap.utils.io import home_relative

REPO = Path(__file__).resolve().parents[2]
OUTPUTS = ("reports", "results", "metrics", "plots", "models", "pairwise", "datasets", "dvc.lock")
# An absolute path into a home, a temporary folder or a build machine's work tree.
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:root|home/[^/\s\"']+|tmp|work|Users/[^/\s\"']+|var/folders)/")


def test_no_committed_output_holds_a_machine_path():
    files = subprocess.run(["git", "ls-files", "--", *OUTPUTS], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    assert len(files) > 100
    found = []
    for name in files:
        try:
            text = (REPO / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue  # binary (figures, npz) or deleted in the work tree
        found += [f"{name}: {m.group(0)}..." for m in MACHINE_PATH.finditer(text)][:1]
    assert not found, f"{len(found)} committed output(s) hold a machine path, first: {found[:5]}"


def test_the_pattern_finds_what_it_must(tmp_path, monkeypatch):
    assert MACHINE_PATH.search('"checkpoint /root/.cache/torch/x"') and MACHINE_PATH.search("/home/ann/data")
    assert not MACHINE_PATH.search("~/.cache/torch/x and data/real_corpus, models:/x/1, s3://b/tmp/x")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert home_relative(tmp_path / ".cache" / "f.pt") == "~/.cache/f.pt"
    assert home_relative("/opt/x") == "/opt/x" and home_relative(str(tmp_path) + "x/y") == str(tmp_path) + "x/y"
