"""The report's real-corpus section (clapcap.reporting.real_corpus): the tower CLAP, RobustCLAP
and the captioning study's configurations over their seeds, from the stages' own files."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from clapcap.reporting.collect import CollectParams, collect_inputs
from clapcap.reporting.real_corpus import caption_configs
from clapcap.reporting.report import build_report


def _write(path: Path, data: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def _studies(tmp_path: Path) -> CollectParams:
    ci = {"value": 0.16, "low": 0.14, "high": 0.18}
    side = {k: ci for k in ("r@1", "r@5", "r@10", "map@10")}
    low = {k: {"value": 0.01, "low": 0.0, "high": 0.02} for k in ("r@1", "r@5", "r@10", "map@10")}
    clap = _write(tmp_path / "real_clap" / "metrics.json", {"test": {
        "clips": 534, "captions": 919, "chance": {"r@1": {"t2a": 0.002, "a2t": 0.002}, "r@10": {"t2a": 0.019, "a2t": 0.019}},
        "tower_clap": {"t2a": side, "a2t": side}, "untrained_heads": {"t2a": low, "a2t": low}}})
    robust = _write(tmp_path / "real_robust" / "summary.json", {
        name: {"original/t2a_r@10": 0.16, "view2/t2a_r@10": v, "heldout/t2a_r@10": 0.18, "view2/drop_r@10": 0.06,
               "heldout/drop_r@10": 0.07, "zero_shot_accuracy": 0.15} for name, v in (("base", 0.09), ("robust", 0.11))})
    caps = tmp_path / "real_captioning"
    for name, cider in (("gpt2_seed0", 0.10), ("gpt2_seed1", 0.14), ("gpt2_seed2", 0.18), ("smollm2_seed0", 0.35),
                        ("encoder_yamnet_gpt2_s1_seed0", 0.16)):
        _write(caps / "results" / f"{name}.json", {"test": {"corpus": {"cider_d": cider, "meteor": 0.1}}})
    _write(caps / "references" / "scores.json", {
        "n_test_clips": 534, "systems": {"retrieval": {"corpus": {"cider_d": 0.436, "meteor": 0.107}},
                                         "labels": {"corpus": {"cider_d": 0.132, "meteor": 0.102}}},
        "overlap": {"clips_with_a_training_caption": 135, "systems": {"retrieval": {
            "overlapping_mean": 1.5, "other_mean": 0.05, "verdict": "leaky"}}}})
    return CollectParams(out_dir=str(tmp_path / "inputs"), real_clap=str(clap), real_robust=str(robust),
                         real_captioning=str(caps))


def test_configurations_are_averaged_over_their_seeds(tmp_path):
    params = _studies(tmp_path)
    configs = caption_configs(Path(params.real_captioning) / "results")
    assert list(configs) == ["gpt2", "smollm2", "encoder_yamnet_gpt2_s1"]  # LM rows first
    assert configs["gpt2"]["seeds"] == [0, 1, 2]
    assert configs["gpt2"]["metrics"]["cider_d"]["mean"] == pytest.approx(0.14)
    assert configs["gpt2"]["metrics"]["cider_d"]["std"] == pytest.approx(statistics.stdev([0.10, 0.14, 0.18]))
    assert configs["smollm2"]["metrics"]["cider_d"]["std"] is None  # one seed: no std


def test_the_section_shows_the_three_studies_second_in_the_report(tmp_path):
    params = _studies(tmp_path)
    inputs = collect_inputs(params)
    assert "real_corpus" in inputs
    summary = build_report(inputs, tmp_path / "report")
    assert summary["sections"]["real_corpus"]["status"] == "ok"
    md = (tmp_path / "report" / "report.md").read_text()
    heads = [line for line in md.splitlines() if line.startswith("## ")]
    assert heads[1] == "## Real corpus: thousands of real recordings"
    tables = tmp_path / "report" / "tables"
    captioning = (tables / "real_corpus_captioning.md").read_text()
    assert "| gpt2 (3 seeds) | 0.140 ± 0.040 |" in captioning and "| reference: retrieval | **0.436** |" in captioning
    assert "| robust | **0.1600** | **0.1100** |" in (tables / "real_corpus_robust.md").read_text()
    assert "| tower_clap | **0.160** | **0.160** |" in (tables / "real_corpus_retrieval.md").read_text()
    assert (tmp_path / "report" / "figures" / "real_corpus_captioning.png").is_file()


def test_no_section_before_every_study_has_run(tmp_path):
    params = _studies(tmp_path)
    Path(params.real_robust).unlink()
    assert "real_corpus" not in collect_inputs(params)


def test_specialist_rows_get_a_table_of_their_own(tmp_path):
    """Subset runs are tested on their subset's clips: never a row of the all-clips table."""
    params = _studies(tmp_path)
    results = Path(params.real_captioning) / "results"
    assert not (tmp_path / "none").exists()
    build_report(collect_inputs(params), tmp_path / "none")
    assert not (tmp_path / "none" / "tables" / "real_corpus_specialists.md").exists()  # no subset runs: no table
    for seed, (whisper, yamnet) in enumerate(((0.30, 0.10), (0.34, 0.12))):
        _write(results / f"subset_speech_whisper_tiny_en_gpt2_s1_seed{seed}.json",
               {"test": {"corpus": {"cider_d": whisper}}})
        _write(results / f"subset_speech_yamnet_gpt2_s1_seed{seed}.json", {"test": {"corpus": {"cider_d": yamnet}}})
    assert list(caption_configs(results)) == ["gpt2", "smollm2", "encoder_yamnet_gpt2_s1"]
    assert list(caption_configs(results, subsets=True)) == ["subset_speech_whisper_tiny_en_gpt2_s1",
                                                            "subset_speech_yamnet_gpt2_s1"]
    build_report(collect_inputs(params), tmp_path / "report")
    table = (tmp_path / "report" / "tables" / "real_corpus_specialists.md").read_text()
    assert "| speech_whisper_tiny_en_gpt2_s1 (2 seeds) | 0.320 ± 0.028 |" in table  # no best across subsets
    assert "subset_" not in (tmp_path / "report" / "tables" / "real_corpus_captioning.md").read_text()
