"""The encoder axis on subsets where an encoder is specialised (``specialists``): stage-1 runs on
each subset's clips, findings that claim the specialist better there, and no part in the champion
selection."""

from __future__ import annotations

import pytest
from caption_fixtures import corpus_with_dumps, fake_score_captions, subset_study_section

from clapcap.config import ConfigError, from_dict
from clapcap.experiments.captioning import study as exp


@pytest.fixture(scope="module")
def specialist_study(tmp_path_factory):
    import torch

    from clapcap.data.subset import ColumnSubsetParams, column_subsets

    torch.set_num_threads(1)
    mp = pytest.MonkeyPatch()
    mp.setattr("clapcap.captioning.evaluate.score_captions", fake_score_captions)
    tmp = tmp_path_factory.mktemp("specialists")
    corpus, dumps = corpus_with_dumps(tmp, n_clips=40, music_fraction=0.5, encoders=["base", "spec"])
    music, general = column_subsets(ColumnSubsetParams(dataset_dir=str(corpus), out_dir=str(tmp / "subsets"),
                                                       column="source", values=["synthetic_music", "synthetic"],
                                                       max_clips={"train": 8}))
    encoders = {"base": {"dump": dumps["base"]}, "spec": {"dump": dumps["spec"]}}
    params = from_dict(exp.CaptioningParams, subset_study_section(corpus, dumps["base"], tmp / "out", specialists={
        "music": {"dataset_dir": str(music), "baseline": "base", "seeds": [0, 1], "encoders": encoders},
        "general": {"dataset_dir": str(general), "baseline": "base", "seeds": [0, 1], "encoders": encoders}}))
    records = exp.run_ablation(params, "subset", name="music")
    yield params, records, music, general
    mp.undo()


def test_subset_runs_train_and_test_on_their_subset_only(specialist_study):
    from clapcap.data.prepare import load_dataset
    from clapcap.utils.io import read_json

    params, records, music, _ = specialist_study
    assert sorted(r["spec"]["name"] for r in records) == [
        "subset_music_base_gpt2_s1_seed0", "subset_music_base_gpt2_s1_seed1",
        "subset_music_spec_gpt2_s1_seed0", "subset_music_spec_gpt2_s1_seed1"]
    assert all(r["spec"]["stages"] == [1] and r["spec"]["subset"] == "music" for r in records)
    m = load_dataset(music).manifest
    preds = read_json(exp.test_predictions_path(params.out_dir, "subset_music_spec_gpt2_s1_seed1"))
    assert set(preds) == set(m.loc[m["split"] == "test", "clip_id"])
    assert exp.run_ablation(params, "subset", name="music", seed=1) == [r for r in records if r["spec"]["seed"] == 1]
    with pytest.raises(ValueError, match="no subset 'speech'"):
        exp.run_ablation(params, "subset", name="speech")


def test_other_runs_record_no_subset_key():
    """A run that is not a subset run keeps the record it had before subsets existed."""
    from clapcap.experiments.captioning.plan import RunSpec

    assert "subset" not in RunSpec("gpt2_seed0", "lm", "gpt2", 0).record()
    assert RunSpec("x", "subset", "gpt2", 0, subset="speech").record()["subset"] == "speech"


def test_each_subset_has_its_findings_and_no_part_in_the_champion_selection(specialist_study, monkeypatch):
    from clapcap.experiments.captioning.findings import FindingsInputError, _specialist_findings
    from clapcap.experiments.captioning.registry import candidates

    params, _, _, _ = specialist_study
    monkeypatch.setattr("clapcap.experiments.captioning.findings.score_captions", fake_score_captions)
    with pytest.raises(FindingsInputError, match="subset_general_base_gpt2_s1_seed0"):  # not run yet
        _specialist_findings(params, "cider_d", exp_study())
    exp.run_ablation(params, "subset", name="general")
    found = _specialist_findings(params, "cider_d", exp_study())
    assert [f[0].id for f in found] == ["captioning.specialist.music.spec.vs_base", "captioning.specialist.general.spec.vs_base"]
    spec, a, b, paired = found[0]
    assert (spec.a, spec.b) == ("spec", "base") and paired and a.seeds == b.seeds == (0, 1)
    assert not any(c["name"].startswith("subset_") for c in candidates(params.out_dir))


def exp_study():
    from clapcap.experiments.captioning.findings import SYNTHETIC

    return SYNTHETIC


def test_a_subset_needs_its_baseline_among_its_encoders():
    with pytest.raises(ConfigError, match="specialists.speech: baseline 'yamnet' is not one of"):
        from_dict(exp.CaptioningParams, {"specialists": {"speech": {"dataset_dir": "d", "baseline": "yamnet",
                                                                    "encoders": {"whisper": {"dump": "p"}}}}})


def test_the_real_studys_stages_write_the_runs_it_plans():
    """dvc.yaml's real_caption_specialist names its outputs by hand (encoder names differ per
    family): they must be the runs ``specialists`` plans, or DVC would lose or miss results."""
    from pathlib import Path

    import yaml

    from clapcap.config import load_section
    from clapcap.experiments.captioning.plan import subset_specs

    root = Path(__file__).resolve().parents[3]
    params = load_section(exp.CaptioningParams, "real_captioning_study", root / "params.yaml")
    stage = yaml.safe_load((root / "dvc.yaml").read_text())["stages"]["real_caption_specialist"]
    assert set(stage["foreach"]) == set(params.specialists)
    for family, item in stage["foreach"].items():
        outs = {next(iter(o)) if isinstance(o, dict) else o for o in stage["do"]["outs"]}
        outs = {o.replace("${key}", family).replace("${item.encoder}", item["encoder"]) for o in outs}
        planned = {p for s in subset_specs(params, family) for p in (f"{params.out_dir}/runs/{s.name}",
                                                                     f"{params.out_dir}/results/{s.name}.json")}
        assert outs == planned, family
        assert item["encoder"] in params.specialists[family].encoders
