"""The captioning summary's comparison of each LM's noise floor with the trivial baseline."""

from __future__ import annotations

import pytest

from clapcap.reporting.captioning_tables import baseline_margins, build_summary, to_markdown
from clapcap.utils.io import write_json


def _floor(lm: str, values: dict[str, list[float]]) -> dict:
    import numpy as np

    return {"lm": lm, "seeds": [0, 1, 2], "primary": "cider_d",
            "metrics": {m: {"mean": float(np.mean(v)), "std": float(np.std(v)), "values": v} for m, v in values.items()}}


def test_margins_call_clear_only_when_every_seed_wins_beyond_the_noise(tmp_path):
    write_json(tmp_path / "baseline_trivial.json", {"test": {"corpus": {"cider_d": 0.40, "meteor": 0.15}}})
    # gpt2: all seeds far above on both metrics. t5: CIDEr-D mean above but one seed below; METEOR
    # above on every seed but by less than two std.
    write_json(tmp_path / "noise_floor" / "gpt2.json", _floor("gpt2", {"cider_d": [0.80, 0.82, 0.78],
                                                                      "meteor": [0.25, 0.26, 0.24],
                                                                      "spice": [0.1, 0.1, 0.1]}))
    write_json(tmp_path / "noise_floor" / "t5.json", _floor("t5", {"cider_d": [0.70, 0.35, 0.60],
                                                                  "meteor": [0.151, 0.20, 0.152]}))
    rows = {(r["lm"], r["metric"]): r for r in baseline_margins(tmp_path)}
    assert set(rows) == {("gpt2", "cider_d"), ("gpt2", "meteor"), ("t5", "cider_d"), ("t5", "meteor")}
    g = rows["gpt2", "cider_d"]
    assert g["margin"] == pytest.approx(0.40) and g["relative"] == pytest.approx(1.0) and g["clear"]
    assert rows["gpt2", "meteor"]["clear"]
    assert rows["t5", "cider_d"]["min"] == 0.35 and not rows["t5", "cider_d"]["clear"]
    t5m = rows["t5", "meteor"]
    assert t5m["min"] > 0.15 and t5m["margin"] < 2 * t5m["std"] and not t5m["clear"]
    md = to_markdown(build_summary(tmp_path))
    assert "| gpt2 | cider_d | 0.800 ± 0.016 | 0.780 | 0.400 | +0.400 (+100%) | yes |" in md
    assert "| t5 | cider_d |" in md and md.count("| no |") == 2


def test_no_baseline_file_gives_no_margins(tmp_path):
    write_json(tmp_path / "noise_floor" / "gpt2.json", _floor("gpt2", {"cider_d": [0.8, 0.8, 0.8]}))
    assert baseline_margins(tmp_path) == []
    assert "trivial baseline" not in to_markdown(build_summary(tmp_path))


def test_semantic_column_joins_every_row_kind(tmp_path):
    """sbert_sim_minilm.json (clapcap.experiments.captioning.scores) adds its column to lm, arch,
    encoder and decoding rows; a row it does not cover shows '-'."""
    write_json(tmp_path / "noise_floor" / "gpt2.json", _floor("gpt2", {"cider_d": [0.8, 0.7, 0.9]}))
    spec = {"kind": "arch", "lm": "gpt2", "name": "gpt2_dropout0.3_seed0", "model_overrides": {"dropout": 0.3}}
    write_json(tmp_path / "results" / "gpt2_dropout0.3_seed0.json", {"spec": spec, "test": {"corpus": {"cider_d": 0.5}}})
    for seed in (0, 1):
        name = f"encoder_logmel_gpt2_s1_seed{seed}"
        write_json(tmp_path / "results" / f"{name}.json",
                   {"spec": {"kind": "encoder", "lm": "gpt2", "name": name}, "test": {"corpus": {"cider_d": 0.4}}})
    write_json(tmp_path / "decoding" / "gpt2" / "seed0" / "beam3.json",
               {"name": "beam3", "lm": "gpt2", "test": {"corpus": {"cider_d": 0.6}}})
    write_json(tmp_path / "decoding" / "gpt2" / "seed0" / "greedy.json",
               {"name": "greedy", "lm": "gpt2", "test": {"corpus": {"cider_d": 0.6}}})
    write_json(tmp_path / "sbert_sim_minilm.json", {
        "runs": {"gpt2_dropout0.3_seed0": {"corpus": 0.61}, "encoder_logmel_gpt2_s1_seed0": {"corpus": 0.5},
                 "encoder_logmel_gpt2_s1_seed1": {"corpus": 0.7}, "decoding/gpt2/seed0/beam3": {"corpus": 0.55}},
        "configs": {"gpt2": {"mean": 0.64, "std": 0.02}}})
    summary = build_summary(tmp_path)
    by = {(r["group"], r["name"]): r for r in summary["rows"]}
    assert "sbert_sim_minilm" in summary["metrics"]
    assert by["lm", "gpt2 (from scratch; mean of 3 seeds)"]["metrics"]["sbert_sim_minilm"] == 0.64
    assert by["lm", "gpt2 (from scratch; mean of 3 seeds)"]["std"]["sbert_sim_minilm"] == 0.02
    assert by["arch", "dropout=0.3"]["metrics"]["sbert_sim_minilm"] == 0.61
    assert by["encoder", "logmel (mean of 2 seeds)"]["metrics"]["sbert_sim_minilm"] == pytest.approx(0.6)
    assert by["decoding", "beam3"]["metrics"]["sbert_sim_minilm"] == 0.55
    assert "sbert_sim_minilm" not in by["decoding", "greedy"]["metrics"]
    md = to_markdown(summary)
    assert "| 0.640 ± 0.020 |" in md and "| decoding | greedy | gpt2 | 0.600 | - |" in md
