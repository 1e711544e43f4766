"""The report's captioning sections carry sbert_sim_minilm where the study scored the run."""

from __future__ import annotations

from clapcap.reporting.collect import captioning_sections
from clapcap.utils.io import write_json


def test_sections_take_semantic_scores_by_record_name(tmp_path):
    res = tmp_path / "results"
    for seed in (0, 1):
        write_json(res / f"gpt2_seed{seed}.json", {"test": {"corpus": {"cider_d": 0.5 + seed}}})
        write_json(res / f"encoder_logmel_gpt2_s1_seed{seed}.json", {"test": {"corpus": {"cider_d": 0.3}}})
    write_json(tmp_path / "decoding" / "gpt2" / "seed0" / "greedy.json", {"test": {"corpus": {"cider_d": 0.5}}})
    write_json(tmp_path / "decoding" / "gpt2" / "seed0" / "beam3.json", {"test": {"corpus": {"cider_d": 0.4}}})
    write_json(tmp_path / "sbert_sim_minilm.json", {"runs": {
        "gpt2_seed0": {"corpus": 0.61}, "gpt2_seed1": {"corpus": 0.63},
        "encoder_logmel_gpt2_s1_seed1": {"corpus": 0.4}, "decoding/gpt2/seed0/greedy": {"corpus": 0.6}}})
    out = captioning_sections(tmp_path, ["gpt2"], "gpt2", "greedy")
    assert [s["sbert_sim_minilm"] for s in out["lm_ablation"][0]["seeds"]] == [0.61, 0.63]
    assert out["pipeline"][0]["metrics"] == {"CIDEr-D": 0.5, "sbert_sim_minilm": 0.61}
    enc = out["encoder_ablation"][0]["seeds"]
    assert "sbert_sim_minilm" not in enc[0] and enc[1]["sbert_sim_minilm"] == 0.4
    dec = {r["name"]: r["metrics"] for r in out["decoding_ablation"]}
    assert dec["greedy"]["sbert_sim_minilm"] == 0.6 and "sbert_sim_minilm" not in dec["beam3"]


def test_without_the_file_nothing_changes(tmp_path):
    write_json(tmp_path / "results" / "gpt2_seed0.json", {"test": {"corpus": {"cider_d": 0.5}}})
    out = captioning_sections(tmp_path, ["gpt2"], "gpt2", "greedy")
    assert out["lm_ablation"][0]["seeds"] == [{"CIDEr-D": 0.5}]
