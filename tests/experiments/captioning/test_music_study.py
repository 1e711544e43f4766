"""The encoder ablation on the music subset: runs on the subset's clips, their own findings,
summary rows, and no part in the champion selection."""

from __future__ import annotations

import pytest
from caption_fixtures import corpus_with_dumps, fake_score_captions, subset_study_section

from clapcap.config import ConfigError, from_dict
from clapcap.experiments.captioning import study as exp


@pytest.fixture(scope="module")
def music_study(tmp_path_factory):
    import torch

    from clapcap.data.subset import subset_dataset

    torch.set_num_threads(1)
    mp = pytest.MonkeyPatch()
    mp.setattr("clapcap.captioning.evaluate.score_captions", fake_score_captions)
    tmp = tmp_path_factory.mktemp("music_study")
    corpus, dumps = corpus_with_dumps(tmp, n_clips=30, music_fraction=0.7, encoders=["clap", "other"])
    music = subset_dataset(corpus, tmp / "music", source="synthetic_music")
    params = from_dict(exp.CaptioningParams, subset_study_section(corpus, dumps["clap"], tmp / "out", music={
        "dataset_dir": str(music), "baseline": "clap", "seeds": [0, 1],
        "encoders": {"clap": {"dump": dumps["clap"]}, "other": {"dump": dumps["other"]}}}))
    records = exp.run_ablation(params, "music")
    yield params, records, music
    mp.undo()


def test_music_runs_see_only_the_music_clips(music_study):
    from clapcap.data.prepare import load_dataset
    from clapcap.utils.io import read_json

    params, records, music = music_study
    assert sorted(r["spec"]["name"] for r in records) == [
        "music_clap_gpt2_s1_seed0", "music_clap_gpt2_s1_seed1", "music_other_gpt2_s1_seed0", "music_other_gpt2_s1_seed1"]
    assert all(r["spec"]["stages"] == [1] for r in records)
    m = load_dataset(music).manifest
    test_ids = set(m.loc[m["split"] == "test", "clip_id"])
    preds = read_json(exp.test_predictions_path(params.out_dir, "music_other_gpt2_s1_seed1"))
    assert set(preds) == test_ids and len(test_ids) < 30 * 0.5
    assert exp.run_ablation(params, "music", name="other", seed=1) == [records[-1]]  # finished: not rerun


def test_music_rows_in_findings_summary_and_not_in_champion_selection(music_study, monkeypatch):
    from clapcap.experiments.captioning.findings import _music_findings
    from clapcap.experiments.captioning.registry import candidates
    from clapcap.reporting.captioning_tables import build_summary

    params, _, music = music_study
    monkeypatch.setattr("clapcap.experiments.captioning.findings.score_captions", fake_score_captions)
    (spec, a, b, paired), = _music_findings(params, "cider_d")
    assert spec.id == "captioning.music.clap.vs_other" and paired
    assert a.values.shape == b.values.shape == (2, len(a.values[0])) and a.seeds == (0, 1)
    rows = [r for r in build_summary(params.out_dir, music_baseline="clap")["rows"] if r["group"] == "music"]
    assert {r["name"] for r in rows} == {"clap (mean of 2 seeds)", "other (mean of 2 seeds)"}
    other = next(r for r in rows if r["encoder"] == "other")
    clap = next(r for r in rows if r["encoder"] == "clap")
    assert other["delta"] == pytest.approx(other["metrics"]["cider_d"] - clap["metrics"]["cider_d"])
    assert not any(c["name"].startswith("music_") for c in candidates(params.out_dir))


def test_music_config_is_checked():
    with pytest.raises(ConfigError, match="music: baseline 'x' is not one of"):
        from_dict(exp.CaptioningParams, {"music": {"dataset_dir": "d", "baseline": "x", "encoders": {"a": {"dump": "p"}}}})


def test_music_rows_fill_the_reports_encoder_ablation(music_study, tmp_path):
    """The reduced study's encoder ablation is the music study: the final report shows its rows."""
    from clapcap.reporting.collect import CollectParams, collect_and_report

    params, _, _ = music_study
    summary = collect_and_report(CollectParams(out_dir=str(tmp_path / "inputs")), tmp_path / "report",
                                 captioning_dir=params.out_dir, lms=params.lms, music_baseline="clap")
    assert summary["sections"]["encoder_ablation"]["status"] == "ok"
    section = (tmp_path / "report" / "report.md").read_text().split("## Audio-encoder ablation")[1].split("##")[0]
    assert "Not run" not in section and "| clap (music) |" in section and "| other (music) |" in section


def test_music_seed_group_carries_mean_and_std(music_study, tmp_path, monkeypatch):
    """Each music encoder's seed group gets the mean and std over its seeds, as a noise floor's does."""
    import dataclasses
    import shutil

    import mlflow

    from clapcap.tracked.captioning import study_tracker
    from clapcap.utils.io import read_json

    params, _, _ = music_study
    shutil.copytree(params.out_dir, tmp_path / "out")
    tracked = dataclasses.replace(params, out_dir=str(tmp_path / "out"), track=True)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    (tmp_path / "out" / "results" / "music_other_gpt2_s1_seed1.json").unlink()  # the last seed to finish
    exp.run_ablation(tracked, "music", name="other", seed=1, tracker=study_tracker(tracked))
    runs = {r.info.run_name: r for r in mlflow.search_runs(experiment_names=["clapcap-captioning"],
                                                          output_format="list")}
    parent = runs["captioning/gpt2/music_other_gpt2_s1"].data.metrics
    values = [read_json(tmp_path / "out" / "results" / f"music_other_gpt2_s1_seed{s}.json")["test"]["corpus"]["cider_d"]
              for s in (0, 1)]
    assert parent["test/cider_d_mean"] == pytest.approx(sum(values) / 2)
    assert parent["test/cider_d_std"] == pytest.approx(abs(values[0] - values[1]) / 2 ** 0.5)
