"""Conclusions as data: evaluate, write, load, diff, and the `clapcap conclusions diff` verb."""

from __future__ import annotations

import json

import numpy as np
import pytest

from clapcap.cli import main
from clapcap.evaluation.conclusions import (
    ConclusionsError,
    FindingSpec,
    diff_conclusions,
    evaluate_finding,
    load_conclusions,
    write_conclusions,
)
from clapcap.evaluation.seed_bootstrap import SeedScores

SPEC = FindingSpec(id="robust.original.t2a_r10", statement="RobustCLAP loses no t2a R@10 on originals",
                   metric="t2a/r10", a="robust", b="base", claim="not_less", margin=0.02)


def _scores(rng, shift, seeds=(0, 1, 2), n=300):
    base = (rng.random(n) < 0.6).astype(float)
    rows = [np.clip(base + (rng.random(n) < abs(shift)) * np.sign(shift), 0, 1) for _ in seeds]
    return SeedScores(np.array(rows), seeds)


def _entry(fid, v, effect=0.0):
    return {"id": fid, "statement": "s", "metric": "m", "a": "A", "b": "B", "claim": "greater",
            "effect": effect, "ci": {"low": effect - 0.1, "high": effect + 0.1}, "verdict": v}


def test_evaluate_write_load_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    entry = evaluate_finding(SPEC, _scores(rng, 0.0), _scores(rng, 0.0), n_resamples=300)
    assert entry["verdict"] in ("holds", "within noise", "reversed")
    assert entry["seeds"] == {"a": [0, 1, 2], "b": [0, 1, 2]} and entry["n_seeds"] == {"a": 3, "b": 3}
    path = write_conclusions([entry], tmp_path / "conclusions.json")
    loaded = load_conclusions(path)
    assert loaded[SPEC.id]["ci"] == entry["ci"]
    json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"non-strict JSON: {c}"))


def test_a_clear_loss_reverses_the_no_loss_claim():
    rng = np.random.default_rng(1)
    base = _scores(rng, 0.0)
    worse = SeedScores(np.clip(base.values - (rng.random(base.values.shape) < 0.2), 0, 1), base.seeds)
    entry = evaluate_finding(SPEC, worse, base, n_resamples=500)
    assert entry["ci"]["high"] < -0.02 and entry["verdict"] == "reversed"


def test_diff_lists_flips_changes_and_missing_findings():
    old = {e["id"]: e for e in [_entry("a", "holds"), _entry("b", "holds"), _entry("c", "within noise"),
                                 _entry("d", "reversed")]}
    new = {e["id"]: e for e in [_entry("a", "reversed"), _entry("b", "within noise"),
                                 _entry("c", "within noise"), _entry("e", "holds")]}
    diff = diff_conclusions(old, new)
    assert diff.flipped == [("a", "holds", "reversed")]
    assert diff.changed == [("b", "holds", "within noise")]
    assert diff.unchanged == [("c", "within noise")]
    assert diff.added == ["e"] and diff.removed == ["d"]
    assert not diff.ok
    assert diff_conclusions(old, old).ok


@pytest.mark.parametrize("content, message", [
    ("{", "not valid JSON"),
    ('{"version": 1, "findings": [{"id": "x", "effect": NaN}]}', "NaN is not valid JSON"),
    ('{"version": 2, "findings": []}', "version 1"),
    ('{"version": 1, "findings": [{"id": "x"}]}', "missing"),
])
def test_load_refuses_malformed_files_naming_them(tmp_path, content, message):
    path = tmp_path / "c.json"
    path.write_text(content)
    with pytest.raises(ConclusionsError, match=message) as err:
        load_conclusions(path)
    assert str(path) in str(err.value)


def test_write_refuses_duplicate_ids(tmp_path):
    with pytest.raises(ConclusionsError, match="twice"):
        write_conclusions([_entry("a", "holds"), _entry("a", "holds")], tmp_path / "c.json")


def test_cli_diff_exit_codes(tmp_path, capsys):
    old = write_conclusions([_entry("a", "holds"), _entry("b", "holds")], tmp_path / "old.json")
    same = write_conclusions([_entry("a", "holds"), _entry("b", "within noise")], tmp_path / "same.json")
    flip = write_conclusions([_entry("a", "reversed"), _entry("b", "holds")], tmp_path / "flip.json")
    assert main(["conclusions", "diff", str(old), str(same)]) == 0
    assert "changed  b: holds -> within noise" in capsys.readouterr().out
    assert main(["conclusions", "diff", "--strict", str(old), str(same)]) == 1
    assert main(["conclusions", "diff", str(old), str(flip)]) == 1
    assert "FLIPPED  a: holds -> reversed" in capsys.readouterr().out
