"""Collecting pipeline results into report inputs, then building the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clapcap.evaluation.conclusions import ConclusionsError, load_conclusions, merge_conclusions
from clapcap.reporting.collect import CollectParams, collect_and_report, collect_inputs

FIXTURES = Path(__file__).parent / "fixtures"


def _scores(cider: float) -> dict:
    return {"corpus": {"bleu_1": 0.5, "meteor": 0.2, "cider_d": cider}}


def _write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return str(path)


def test_collect_and_report(tmp_path):
    cap = tmp_path / "cap"
    for lm in ("gpt2", "t5"):
        for seed, c in enumerate((0.9, 1.0, 1.1)):
            _write(cap / "results" / f"{lm}_seed{seed}.json", {"test": _scores(c)})
        _write(cap / "results" / f"{lm}_dropout0.5_seed0.json", {"test": _scores(0.7)})
    _write(cap / "results" / "encoder_default_gpt2_s1_seed0.json", {"test": _scores(0.8)})
    _write(cap / "results" / "encoder_default_gpt2_s1_seed1.json", {"test": _scores(0.9)})
    _write(cap / "results" / "encoder_logmel_gpt2_s1_seed0.json", {"test": _scores(0.6)})
    _write(cap / "decoding" / "gpt2" / "seed0" / "greedy.json", {"test": _scores(0.9)})
    _write(cap / "decoding" / "gpt2" / "seed0" / "beam3.json", {"test": _scores(0.95)})
    _write(cap / "decoding" / "gpt2" / "seed0" / "beam3.predictions.json", {"c1": "x"})
    _write(cap / "baseline_trivial.json", {"test": _scores(0.3)})
    retrieval = _write(tmp_path / "r.json", {"t2a": {"r@1": 0.1, "r@5": 0.3, "r@10": 0.5, "map@10": 0.2}})
    leak = _write(tmp_path / "leak.json", {"name": "leak", **_scores(2.0), "leakage": {"verdict": "leaky"},
                                           "held_out_row": {"name": "leak (held-out)", **_scores(0.4)}})
    params = CollectParams(out_dir=str(tmp_path / "inputs"), retrieval_metrics={"ours": retrieval},
                           reference_scores=[leak, str(tmp_path / "missing.json")],
                           lr_search_figures={"sweep": str(_write(tmp_path / "lr" / "lr_search.png", {}))})
    inputs = collect_inputs(params, captioning_dir=str(cap), lms=["gpt2", "t5"])
    figures = json.loads((tmp_path / "inputs" / "lr_search_figures.json").read_text())
    assert figures == [{"name": "sweep", "png": "../lr/lr_search.png"}]  # relative: no absolute path
    assert set(inputs) == {"retrieval", "reference_comparison", "lm_ablation", "arch_ablation", "lr_search",
                           "decoding_ablation", "encoder_ablation"}
    rows = json.loads((tmp_path / "inputs" / "reference_comparison.json").read_text())["rows"]
    assert [(r["name"], r["leaky"]) for r in rows] == [
        ("ClipCap gpt2", False), ("ClipCap t5", False), ("most common training caption", False),
        ("leak", True), ("leak (held-out)", False)]
    lms = json.loads((tmp_path / "inputs" / "lm_ablation.json").read_text())["rows"]
    assert [r["name"] for r in lms] == ["gpt2", "t5", "most common training caption"]
    assert lms[-1]["metrics"]["CIDEr-D"] == 0.3 and "seeds" not in lms[-1]
    dec = json.loads((tmp_path / "inputs" / "decoding_ablation.json").read_text())["rows"]
    assert {r["name"]: r["baseline"] for r in dec} == {"beam3": False, "greedy": True}
    enc = json.loads((tmp_path / "inputs" / "encoder_ablation.json").read_text())["rows"]
    assert [(r["name"], len(r["seeds"])) for r in enc] == [("default", 2), ("logmel", 1)]  # seeds grouped
    found = [str(FIXTURES / "findings.json"), str(tmp_path / "not_built.json")]
    summary = collect_and_report(params, tmp_path / "report", captioning_dir=str(cap), lms=["gpt2", "t5"],
                                 conclusions=found, conclusions_out=tmp_path / "conclusions.json")
    assert load_conclusions(tmp_path / "conclusions.json").keys() == {"fixture.gain", "fixture.noise"}
    assert summary["sections"]["findings"]["status"] == "ok"
    assert summary["sections"]["reference_comparison"]["status"] == "ok"
    report = (tmp_path / "report" / "report.md").read_text()
    assert "†" in report
    lm_table = report.split("## Language-model ablation")[1].split("##")[0]
    assert "| most common training caption | – |" in lm_table


def test_music_rows_are_the_encoder_ablation_of_the_reduced_study(tmp_path):
    """The reduced study runs no all-clips encoder seeds; its encoder ablation is the music
    study, whose rows form their own group against the music baseline."""
    cap = tmp_path / "cap"
    for seed, c in enumerate((0.9, 1.0)):
        _write(cap / "results" / f"gpt2_seed{seed}.json", {"test": _scores(c)})
        _write(cap / "results" / f"music_synth_clap_gpt2_s1_seed{seed}.json", {"test": _scores(0.5 + seed / 10)})
        _write(cap / "results" / f"music_whisper_tiny_en_gpt2_s1_seed{seed}.json", {"test": _scores(0.4)})
    _write(cap / "results" / "music_crepe_tiny_gpt2_s1_seed0.json",  # a skip marker (clapcap.utils.skip)
           {"skipped": True, "stage": "caption_encoder_music@0", "reason": "no music clips"})
    summary = collect_and_report(CollectParams(out_dir=str(tmp_path / "inputs")), tmp_path / "report",
                                 captioning_dir=str(cap), lms=["gpt2"])
    assert summary["sections"]["encoder_ablation"]["status"] == "ok"
    rows = json.loads((tmp_path / "inputs" / "encoder_ablation.json").read_text())["rows"]
    assert [(r["name"], r["group"], r["baseline"], len(r["seeds"])) for r in rows] == [
        ("synth_clap (music)", "gpt2, music clips", True, 2), ("whisper_tiny_en (music)", "gpt2, music clips", False, 2)]
    section = (tmp_path / "report" / "report.md").read_text().split("## Audio-encoder ablation")[1].split("##")[0]
    assert "Not run" not in section and "| whisper_tiny_en (music) | gpt2, music clips |" in section
    # No finding is stated for the row here (no conclusions file), so no delta of another definition.
    assert "| whisper_tiny_en (music) | gpt2, music clips |  |  |  | no finding |" in section


def test_merge_refuses_an_id_defined_twice(tmp_path):
    with pytest.raises(ConclusionsError, match="'fixture.gain' is also defined"):
        merge_conclusions([FIXTURES / "findings.json", FIXTURES / "findings.json"], tmp_path / "c.json")


def test_llm_views_and_pairwise_sections(tmp_path):
    """The report's two LLM sections, from the files their stages write (absent: 'not run')."""
    from clapcap.paraphrase.dataset import acceptance

    views = tmp_path / "views"
    records = [{"caption": "A bell rings.", "view": "view1", "paraphrase": "Rings, a bell.", "status": "accepted",
                "reason": ""},
               {"caption": "A bell rings.", "view": "view2", "paraphrase": "A gong and a drum hit.",
                "status": "dropped", "reason": "check: new sound event(s): drum"}]
    _write(views / "paraphrase_report.json", {"n_captions": 1, "n_clips": 1, "acceptance": acceptance(records)})
    _write(views / "view_records.json", records)
    study = tmp_path / "pairwise"
    pref = {"x": {"rate": 0.75, "ci_low": 0.5, "ci_high": 0.9, "votes": 8, "n_clips": 4},
            "y": {"rate": 0.25, "ci_low": 0.1, "ci_high": 0.5, "votes": 8, "n_clips": 4}}
    _write(study / "agreement.json", {
        "n_items": 4, "n_votes": 8, "n_human_votes": 0, "preference": {"all judges": pref, "p": pref},
        "agreement": {"fleiss": {"p": {"kappa": 0.4}}, "judge_vs_judge": {"a vs b": {"kappa": 0.5}}},
        "position_bias": {"p": {"first_shown_rate": 0.6}},
        "gold": {"p/a": {"accuracy": 0.9, "ci_low": 0.7, "ci_high": 0.97, "passes": True},
                 "q/c": {"accuracy": 0.5, "ci_low": 0.3, "ci_high": 0.7, "passes": False}},
        "order_consistency": {"p/a": {"consistency": 0.8}, "q/c": {"consistency": 0.0}},
        "judge_runs": [{"pool": "p", "votes": 8, "failures": 2}]})
    from PIL import Image

    Image.new("RGB", (4, 4)).save(study / "preference.png")
    params = CollectParams(out_dir=str(tmp_path / "inputs"), llm_views=str(views), pairwise=str(study))
    summary = collect_and_report(params, tmp_path / "report")
    assert summary["sections"]["llm_views"]["status"] == "ok" and summary["sections"]["pairwise"]["status"] == "ok"
    report = (tmp_path / "report" / "report.md").read_text()
    section = report.split("## RobustCLAP views from a real LLM")[1].split("\n## ")[0]
    assert "| view2 (1) |" in section and "check: new 1" in section and "dropped (check: new sound event(s): drum)" in section
    section = report.split("## Pairwise A/B study with LLM judges")[1].split("\n## ")[0]
    assert "| x (8 votes) | 0.750 |" in section and "Fleiss kappa within each counted judge pool: p 0.400" in section
    assert "p/a: gold accuracy 0.90 [0.70, 0.97], passes, orders agree on 0.80 of items" in section
    assert "q/c: gold accuracy 0.50 [0.30, 0.70], left out" in section
    assert "p 2 of 10" in section and (tmp_path / "report" / "figures" / "pairwise_preference.png").is_file()
    # A subset of two splits: one row per split and view, and what each split paraphrased.
    train_rec = [{**r, "caption": "A dog barks."} for r in records]
    _write(views / "paraphrase_report.json", {
        "n_captions": 2, "n_clips": 2, "acceptance": acceptance(records + train_rec),
        "subset": {"max_clips": {"train": 1}, "captions_per_clip": {"train": 1}, "splits": {
            "train": {"n_clips": 1, "n_captions": 1, "acceptance": acceptance(train_rec)},
            "test": {"n_clips": 1, "n_captions": 1, "acceptance": acceptance(records)}}}})
    _write(views / "view_records.json", records + train_rec)
    collect_and_report(params, tmp_path / "report_split")
    section = (tmp_path / "report_split" / "report.md").read_text().split("## RobustCLAP views from a real LLM")[1]
    assert "| train, view1 (1) |" in section and "| test, all (2) |" in section
    assert "; train: 1 of 1 clips; test: 1 of 1 clips" in section
    empty = collect_and_report(CollectParams(out_dir=str(tmp_path / "i2"), llm_views=str(tmp_path / "no"),
                                             pairwise=str(tmp_path / "no")), tmp_path / "r2")
    assert empty["sections"]["pairwise"]["status"] == "not run"


def test_real_recordings_section(tmp_path):
    """The real benchmark's section from the files its stages write: retrieval against chance,
    captioning with the offline-unavailable metrics named, and a figure."""
    ci = {"r@10": {"low": 0.05, "high": 0.12}}
    res = {b: {d: {"r@10": 0.08 if d == "t2a" else 0.04, "ci": ci} for d in ("t2a", "a2t")}
           for b in ("original", "view1")}
    _write(tmp_path / "real" / "benchmark.json", {
        "n_clips": 129, "params": {"benchmarks": {"original": "captions", "view1": "paraphrases_v1"}},
        "chance": {"r@10": {"t2a": 0.0776, "a2t": 0.0761}}, "models": {"CLAP": res, "RobustCLAP": res}})
    _write(tmp_path / "real" / "captioning" / "scores.json", {"n_clips": 129, "systems": {
        "champion (gpt2_seed0)": {"corpus": {"cider_d": 0.013, "sbert_sim_minilm": 0.32},
                                  "ci": {"sbert_sim_minilm": [0.30, 0.34]}, "unavailable": {"fense": "no asset"}},
        "retrieval captioner": {"corpus": {"cider_d": 0.008, "sbert_sim_minilm": 0.35},
                                "ci": {"sbert_sim_minilm": [0.33, 0.36]}, "unavailable": {"fense": "no asset"}}}})
    _write(tmp_path / "data" / "dataset.json", {"n_clips": 129, "by_source": {"gcompris": 92, "ovos_animals": 10},
                                                "total_seconds": 814.5, "dropped": [{"clip_id": "x"}]})
    params = CollectParams(out_dir=str(tmp_path / "inputs"), real=str(tmp_path / "real"),
                           real_dataset=str(tmp_path / "data"))
    summary = collect_and_report(params, tmp_path / "report")
    assert summary["sections"]["real"]["status"] == "ok"
    report = (tmp_path / "report" / "report.md").read_text()
    section = report.split("## Real recordings (no generator made them)")[1].split("\n## ")[0]
    assert "| chance | 0.078 | 0.076 | 0.078 | 0.076 |" in section
    assert "| CLAP | 0.080 | 0.040 | 0.080 | 0.040 |" in section
    assert "Metrics unavailable offline: fense" in section and "(gcompris 92, ovos_animals 10; 814.5 s)" in section
    assert (tmp_path / "report" / "figures" / "real.png").stat().st_size > 1000
    missing = collect_and_report(CollectParams(out_dir=str(tmp_path / "i2"), real=str(tmp_path / "no"),
                                               real_dataset=str(tmp_path / "data")), tmp_path / "r2")
    assert missing["sections"]["real"]["status"] == "not run"
