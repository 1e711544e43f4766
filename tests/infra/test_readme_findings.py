"""The README's findings block is generated from reports/conclusions.json and checked in lint."""

from __future__ import annotations

import shutil
from pathlib import Path

import readme_findings  # tools/readme_findings.py, on pytest's pythonpath

FIXTURE = Path(__file__).parents[1] / "reporting" / "fixtures" / "findings.json"


def _readme(tmp_path: Path) -> Path:
    path = tmp_path / "README.md"
    path.write_text(f"# title\n\nbefore\n\n{readme_findings.BEGIN}\nstale\n{readme_findings.END}\n\nafter\n")
    return path


def test_write_then_check(tmp_path):
    readme = _readme(tmp_path)
    args = ["--readme", str(readme), "--conclusions", str(FIXTURE)]
    assert readme_findings.main([*args, "--check"]) == 1  # the stale block is caught
    assert readme_findings.main(args) == 0
    text = readme.read_text()
    assert text.startswith("# title\n\nbefore\n\n") and text.endswith("\n\nafter\n") and "stale" not in text
    assert "2 findings: 1 hold, 1 within noise, 0 reversed" in text
    assert "| `fixture.gain` | the method beats the baseline (greater) | +0.300 [+0.300, +0.300] | 3 vs 3 | **holds** |" in text
    assert readme_findings.main([*args, "--check"]) == 0


def test_a_hand_edit_fails_the_check(tmp_path):
    readme = _readme(tmp_path)
    args = ["--readme", str(readme), "--conclusions", str(FIXTURE)]
    readme_findings.main(args)
    readme.write_text(readme.read_text().replace("**within noise**", "**holds**"))
    assert readme_findings.main([*args, "--check"]) == 1


def test_missing_markers_or_file_are_errors(tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text("no markers\n")
    assert readme_findings.main(["--readme", str(readme), "--conclusions", str(FIXTURE)]) == 2
    assert "expected the markers" in capsys.readouterr().err
    shutil.copy(FIXTURE, tmp_path / "c.json")
    assert readme_findings.main(["--readme", str(_readme(tmp_path)), "--conclusions", str(tmp_path / "x.json")]) == 2


def test_the_repository_readme_is_current():
    assert readme_findings.main(["--check"]) == 0
