"""Ablations, noise floor, trivial baseline, summary tables, champion registration and the
findings over seeds (fake scorer)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from caption_fixtures import TINY_MODEL, fake_score_captions, make_dump

from clapcap.config import ConfigError, from_dict, load_section
from clapcap.evaluation.conclusions import load_conclusions
from clapcap.experiments.captioning import findings as fnd
from clapcap.experiments.captioning import study as exp
from clapcap.experiments.captioning.plan import encoder_result_name, encoder_twin

ROOT = Path(__file__).resolve().parents[3]

TRAIN = {"batch_size": 32, "lm_pretrain_epochs": 1, "stage1": {"epochs": 1, "lr_projection": 3e-3},
         "stage2": {"epochs": 1, "lr_projection": 1e-3, "lr_lm": 1e-3}}


@pytest.fixture(autouse=True)
def fake_scorer(monkeypatch):
    monkeypatch.setattr("clapcap.captioning.evaluate.score_captions", fake_score_captions)
    monkeypatch.setattr("clapcap.experiments.captioning.findings.score_captions", fake_score_captions)


def make_params(corpus, tmp, **kw):
    dump = make_dump(corpus, tmp / "dump.npz")
    frames = make_dump(corpus, tmp / "frames.npz", dim=8, frames=3, seed=1)
    return from_dict(exp.CaptioningParams, {
        "dataset_dir": str(corpus), "dump": str(dump), "out_dir": str(tmp / "out"),
        "models": {"gpt2": {"decoder": "gpt2", **TINY_MODEL}, "t5": {"decoder": "t5", **TINY_MODEL}},
        "train": {"gpt2": TRAIN, "t5": TRAIN}, "use_lr_search": False, "noise_seeds": [0, 1],
        "arch": {"prefix_length": [2], "dropout": [], "projection_depth": [1]},
        "decoding_ablation": {"greedy": {}, "beam3_trim": {"strategy": "beam", "num_beams": 3, "trim_words": 4}},
        "encoders": {"frames": {"dump": str(frames), "embedding_key": "audio_frames"}},
        "findings": {"decoding": ["beam3_trim"], "n_resamples": 200,
                     "conclusions": str(tmp / "out" / "conclusions.json"),
                     "findings_md": str(tmp / "out" / "findings.md")},
        "track": False, "progress": False, **kw})


@pytest.fixture(scope="module")
def study(tiny_corpus, tmp_path_factory):
    """The whole tiny study, run once for the module."""
    import torch

    torch.set_num_threads(1)
    mp = pytest.MonkeyPatch()
    mp.setattr("clapcap.captioning.evaluate.score_captions", fake_score_captions)
    params = make_params(tiny_corpus, tmp_path_factory.mktemp("study"))
    floors = {lm: exp.noise_floor(params, lm) for lm in params.lms}
    arch = exp.run_ablation(params, "arch", lm="gpt2")
    enc = exp.run_ablation(params, "encoder")
    dec = exp.run_ablation(params, "decoding", lm="gpt2")
    base = exp.evaluate_baseline(params)
    mp.undo()
    return params, floors, arch, enc, dec, base


def test_specs_cover_every_ablation(study):
    params = study[0]
    names = [s.name for s in exp.all_specs(params)]
    assert names == ["gpt2_seed0", "gpt2_seed1", "t5_seed0", "t5_seed1", "gpt2_prefix_length2_seed0",
                     "gpt2_projection_depth1_seed0", "t5_prefix_length2_seed0", "t5_projection_depth1_seed0",
                     "encoder_default_gpt2_s1_seed0", "encoder_frames_gpt2_s1_seed0"]
    # The study's decoding grid lives in params.yaml: every config loads (typed and checked).
    grid = load_section(exp.CaptioningParams, "captioning", ROOT / "params.yaml")
    assert len(grid.decoding_ablation) >= 20
    for name in grid.decoding_ablation:
        exp.decoding_config(grid, name)
    assert list(from_dict(exp.CaptioningParams, {}).decoding_ablation) == ["greedy"]


def test_noise_floor_has_mean_and_std_of_every_metric(study):
    _, floors, *_ = study
    assert set(floors) == {"gpt2", "t5"}
    for floor in floors.values():
        assert floor["seeds"] == [0, 1]
        for stats in floor["metrics"].values():
            assert len(stats["values"]) == 2
            assert stats["mean"] == pytest.approx(np.mean(stats["values"]))
            assert stats["std"] == pytest.approx(np.std(stats["values"], ddof=1))


def test_records_have_history_scores_and_encoder_stage1_only(study):
    params, _, arch, enc, dec, base = study
    assert arch[0]["model"]["prefix_length"] == 2 and arch[1]["model"]["projection_depth"] == 1
    for rec in arch:
        assert set(rec["history"]) == {"1", "2"} and rec["test"]["primary"] == "cider_d"
        assert "cider_d" in rec["val"]["corpus"] and "fense" in rec["test"]["unavailable"]
    assert [set(r["history"]) for r in enc] == [{"1"}, {"1"}]
    assert enc[1]["model"]["in_dim"] == 8  # derived from the frame-level dump (mean-pooled)
    assert dec[1]["decoding"]["num_beams"] == 3 and dec[1]["checkpoint"] == dec[0]["checkpoint"]
    # The findings' decoding config also ran on the second noise seed's checkpoint.
    assert [(r["name"], r["seed"]) for r in dec] == [("greedy", 0), ("beam3_trim", 0), ("beam3_trim", 1)]
    assert dec[2]["checkpoint"] != dec[1]["checkpoint"]
    preds = pd.read_json(f"{params.out_dir}/decoding/gpt2/seed0/beam3_trim.predictions.json", typ="series")
    assert all(len(c.split()) <= 4 for c in preds)
    assert base["caption"] and set(base["test"]["corpus"]) == {"cider_d", "meteor"}


def test_lm_warmup_is_shared_by_runs_with_the_same_lm_inputs(study):
    from pathlib import Path

    params = study[0]
    # gpt2 seeds 0/1 + prefix_length2, t5 seeds 0/1, frames encoder; projection_depth1 and
    # the default-encoder run reuse gpt2 seed 0's warm-up.
    assert len(list((Path(params.out_dir) / "lm_warmup").glob("lm_*.pt"))) == 6


def test_rerun_skips_finished_configs(study, monkeypatch):
    params = study[0]
    monkeypatch.setattr(exp, "train_captioner", lambda *a, **k: pytest.fail("retrained a finished config"))
    exp.run_ablation(params, "lm")
    exp.run_ablation(params, "decoding", lm="gpt2", name="greedy")


def test_a_decoding_config_added_to_the_grid_runs_alone(study, monkeypatch, tmp_path):
    import shutil

    params = study[0]
    shutil.copytree(params.out_dir, tmp_path / "out")
    grid = {**params.decoding_ablation, "max4": {"max_new_tokens": 4}}
    params = dataclasses.replace(params, out_dir=str(tmp_path / "out"), decoding_ablation=grid)
    ran: list[str] = []
    real = exp._evaluate
    monkeypatch.setattr(exp, "_evaluate", lambda plan, checkpoint, compute: ran.append(plan.decoding.max_new_tokens)
                        or real(plan, checkpoint, compute))
    monkeypatch.setattr(exp, "train_captioner", lambda *a, **k: pytest.fail("retrained for a decoding config"))
    exp.run_ablation(params, "decoding", lm="gpt2", seed=0)
    assert ran == [4]  # greedy and beam3_trim were reused
    seed0 = tmp_path / "out" / "decoding" / "gpt2" / "seed0"
    assert json.loads((seed0 / "max4.json").read_text())["weights_sha256"]
    # A changed config reruns; a config no longer in the grid loses its record.
    grid = {"greedy": {}, "beam3_trim": {"strategy": "beam", "num_beams": 3, "trim_words": 5}}
    params = dataclasses.replace(params, decoding_ablation=grid)
    ran.clear()
    exp.run_ablation(params, "decoding", lm="gpt2", seed=0)
    assert ran == [params.decoding.max_new_tokens]
    assert sorted(p.name for p in seed0.iterdir()) == ["beam3_trim.json", "beam3_trim.predictions.json",
                                                      "greedy.json", "greedy.predictions.json"]


def test_summary_tables(study):
    from clapcap.reporting.captioning_tables import build_summary, write_summary

    params = study[0]
    summary = build_summary(params.out_dir)
    groups = [r["group"] for r in summary["rows"]]
    assert groups.count("lm") == 2 and groups.count("arch") == 2 and groups.count("decoding") == 2
    assert groups[0] == "baseline" and summary["primary"] == "cider_d"
    arch = next(r for r in summary["rows"] if r["group"] == "arch")
    floor = next(r for r in summary["rows"] if r["group"] == "lm" and r["lm"] == arch["lm"])
    assert arch["delta"] == pytest.approx(arch["metrics"]["cider_d"] - floor["metrics"]["cider_d"])
    paths = write_summary(params.out_dir)
    md, tex = paths["md"].read_text(), paths["tex"].read_text()
    assert "| decoding | beam3_trim | gpt2 |" in md and "±" in md
    assert "\\begin{tabular}" in tex and "beam3\\_trim" in tex and "$\\pm$" in tex


def test_champion_is_registered_and_serves_captions(study, mlflow_uri):
    from clapcap.experiments.captioning.registry import candidates, select_champion
    from clapcap.tracked.captioning_register import load_champion, register_champion

    params = study[0]
    found = candidates(params.out_dir)
    best, metric = select_champion(found)
    assert metric == "cider_d" and best["val"]["corpus"]["cider_d"] == max(c["val"]["corpus"]["cider_d"] for c in found)
    result = register_champion(params)
    assert result["name"] == best["name"] and result["alias"] == "champion" and result["version"] == 1
    assert result["decision"]["reason"] == "no champion yet"
    # A second registration of the same candidate is a new version but no evidence of being
    # better (difference 0): it becomes the challenger and the champion stays.
    again = register_champion(params)
    assert again["version"] == 2 and again["alias"] == "challenger" and again["decision"]["compared_to"] == 1
    assert again["decision"]["difference"] == 0.0 and again["decision"]["p_value"] >= 0.05
    # champion.json (a DVC output) is the same bytes after both registrations: the registry's
    # answer (version, alias, ids) is in registration.json, which DVC does not track.
    champion = json.loads((Path(params.out_dir) / "champion.json").read_text())
    assert champion["name"] == best["name"] and not {"model_uri", "version", "alias", "decision"} & set(champion)
    registration = json.loads((Path(params.out_dir) / "registration.json").read_text())
    assert registration["version"] == 2 and registration["model_uri"].startswith("models:/")
    import mlflow

    client = mlflow.MlflowClient()
    assert str(client.get_model_version_by_alias("clapcap-captioner", "champion").version) == "1"
    assert client.get_model_version("clapcap-captioner", "2").tags["clapcap.decision"] == "challenger"
    # The champion's page: its score, its dataset, its training run, its test predictions.
    v1 = client.get_model_version("clapcap-captioner", "1")
    assert v1.tags["clapcap.candidate"] == best["name"] and float(v1.tags["test/cider_d"]) >= 0
    assert v1.source == result["model_uri"]  # the version's page links its logged model
    logged = mlflow.get_logged_model(result["model_uri"].removeprefix("models:/"))
    scores = {m.key: m for m in logged.metrics}
    assert {"val/cider_d", "test/cider_d"} <= set(scores) and scores["test/cider_d"].dataset_name
    register_run = client.get_run(v1.run_id)
    assert "test_predictions.json" in {a.path for a in client.list_artifacts(register_run.info.run_id)}
    trained = register_run.data.params.get("training_run_id")
    assert trained is None or client.get_run(trained).data.tags.get("clapcap.config") in (
        best["name"], Path(best["checkpoint"]).parts[Path(best["checkpoint"]).parts.index("runs") + 1])
    model = load_champion()
    in_dim = 8 if "frames" in best["name"] else 16
    x = np.random.default_rng(0).standard_normal((3, in_dim)).astype(np.float32)
    out = model.predict(x)
    assert len(out) == 3 and all(isinstance(c, str) for c in out)
    assert model.predict(pd.DataFrame({"embedding": list(x)})) == out


def test_bad_params_are_rejected(tiny_corpus, tmp_path):
    with pytest.raises(ConfigError, match="unknown key"):
        from_dict(exp.CaptioningParams, {"modles": {}})
    params = make_params(tiny_corpus, tmp_path)
    with pytest.raises(ValueError, match="no models.opt"):
        exp.lm_specs(params, "opt")
    with pytest.raises(ValueError, match="unknown decoding config"):
        exp.decoding_config(params, "nope")
    with pytest.raises(ConfigError, match="num_beam"):
        exp.decoding_config(from_dict(exp.CaptioningParams, {"decoding_ablation": {"x": {"num_beam": 2}}}), "x")
    with pytest.raises(ValueError, match="unknown ablation kind"):
        exp.run_ablation(params, "prefix")
    with pytest.raises(ValueError, match="nothing matches"):
        exp.run_ablation(params, "arch", lm="gpt2", name="dropout0.9")


@pytest.mark.parametrize(("section", "key"), [
    ({"train": {"gpt2": {"stages": [3]}}}, "train.gpt2"),
    ({"train": {"gpt2": {"stage1": {"epochs": 0}}}}, "train.gpt2"),
    ({"decoding": {"top_p": 1.5}}, "decoding"),
    ({"decoding_ablation": {"x": {"num_beams": 0}}}, "decoding_ablation.x"),
    ({"lms": ["gpt2", "llama"]}, "llama"),
])
def test_bad_captioning_values_fail_at_load(tmp_path, section, key):
    """Every captioning sub-config checks its values when params.yaml is loaded, not when a step runs."""
    import yaml

    from clapcap.config import load_section
    from clapcap.experiments.captioning.config import CaptioningParams

    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump({"captioning": section}))
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_section(CaptioningParams, "captioning", path)


# --- findings over training seeds (clapcap.experiments.captioning.findings) ---------------------------


def _with_reference(params, tmp_path):
    """A reference captioner that always says the first test clip's first caption."""
    refs = json.loads(Path(exp.test_predictions_path(params.out_dir, "gpt2_seed0")).read_text())
    path = tmp_path / "ref_predictions.json"
    path.write_text(json.dumps({cid: "a constant caption" for cid in refs}))
    params.findings.references = {"constant": str(path)}
    return params


def test_findings_cover_every_stated_comparison(study, tmp_path):
    params = _with_reference(study[0], tmp_path)
    exp.run_ablation(params, "arch", lm="t5")  # the module's study trained gpt2's rows only
    found = {f["id"]: f for f in fnd.run_findings(params)}
    assert set(found) == {
        "captioning.gpt2.vs_trivial", "captioning.t5.vs_trivial", "captioning.lm.t5.vs_gpt2",
        "captioning.pipeline.gpt2.vs_constant", "captioning.pipeline.t5.vs_constant",
        "captioning.arch.gpt2.prefix_length2", "captioning.arch.gpt2.projection_depth1",
        "captioning.arch.t5.prefix_length2", "captioning.arch.t5.projection_depth1",
        "captioning.decoding.gpt2.beam3_trim", "captioning.encoder.default.vs_frames"}
    assert load_conclusions(params.findings.conclusions).keys() == found.keys()
    assert "| **" in Path(params.findings.findings_md).read_text()
    # Each side's value is the corpus metric of its runs (the result files), averaged over seeds.
    out = Path(params.out_dir)
    seeds = [json.loads((out / "results" / f"gpt2_seed{s}.json").read_text())["test"]["corpus"]["cider_d"]
             for s in params.noise_seeds]
    trivial = json.loads((out / "baseline_trivial.json").read_text())["test"]["corpus"]["cider_d"]
    f = found["captioning.gpt2.vs_trivial"]
    assert f["a"] == pytest.approx(np.mean(seeds), abs=1e-12) and f["b"] == pytest.approx(trivial, abs=1e-12)
    assert f["n_seeds"] == {"a": 2, "b": 1} and f["noise_floors"] == {"b": 0.0}
    # A one-seed architecture row carries its LM's noise floor (std over the noise seeds).
    arch = found["captioning.arch.gpt2.prefix_length2"]
    assert arch["n_seeds"] == {"a": 1, "b": 2}
    assert arch["noise_floors"]["a"] == pytest.approx(np.std(seeds, ddof=1), abs=1e-12)
    # Decoding is run on every noise seed's checkpoint and compared seed by seed.
    dec = found["captioning.decoding.gpt2.beam3_trim"]
    assert dec["paired_seeds"] and dec["n_seeds"] == {"a": 2, "b": 2}
    assert (out / "decoding" / "gpt2" / "seed1" / "beam3_trim.json").is_file()
    for f in found.values():
        assert f["ci"]["low"] <= f["effect"] <= f["ci"]["high"] or f["verdict"] != "holds"


def test_stale_captions_fail_loudly(study, tmp_path):
    params = _with_reference(study[0], tmp_path)
    path = exp.test_predictions_path(params.out_dir, "t5_seed1")
    original = path.read_text()
    try:
        refs = fnd.load_caption_split(params.dump, fnd.load_dataset(params.dataset_dir).manifest, "test").references()
        path.write_text(json.dumps({cid: refs[cid][0] for cid in json.loads(original)}))  # a perfect score
        with pytest.raises(fnd.FindingsInputError, match="t5_seed1.*stale"):
            fnd.run_findings(params)
    finally:
        path.write_text(original)


def test_missing_inputs_and_one_seed_are_refused(study, tmp_path):

    params = _with_reference(study[0], tmp_path)
    with pytest.raises(fnd.FindingsInputError, match="at least one LM with two"):
        fnd.run_findings(dataclasses.replace(params, noise_seeds=[0]))
    params.findings.references = {"gone": str(tmp_path / "nope.json")}
    with pytest.raises(fnd.FindingsInputError, match="nope.json: not found"):
        fnd.run_findings(params)


def test_pipeline_findings_per_subset_are_scored_within_the_subset(study, tmp_path):
    """Music vs general audio: each subset's findings rescore both sides on its clips only."""
    params = _with_reference(study[0], tmp_path)
    exp.run_ablation(params, "arch", lm="t5")
    test = fnd.load_dataset(params.dataset_dir).split("test")
    sources = sorted(set(test["source"]))
    subsets = {**{s: [s] for s in sources}, "nothing": ["no_such_source"]}
    found = {f["id"]: f for f in fnd.run_findings(params, subsets)}
    assert not any(fid.endswith(".nothing") for fid in found)  # an empty subset is not tested
    refs = fnd.load_caption_split(params.dump, fnd.load_dataset(params.dataset_dir).manifest, "test").references()
    for source in sources:
        ids = set(test.loc[test["source"] == source, "clip_id"].astype(str))
        sub = {c: r for c, r in refs.items() if c in ids}
        for lm in ("gpt2", "t5"):
            f = found[f"captioning.pipeline.{lm}.vs_constant.{source}"]
            per_seed = []
            for seed in params.noise_seeds:
                preds = json.loads(exp.test_predictions_path(params.out_dir, f"{lm}_seed{seed}").read_text())
                scored = fnd.score_captions({c: p for c, p in preds.items() if c in sub}, sub, metrics=["cider_d"])
                per_seed.append(scored["corpus"]["cider_d"])
            assert f["a"] == pytest.approx(np.mean(per_seed), abs=1e-12)
            assert f["n_items"] == len(sub) and f"{len(sub)} {source} test clips" in f["statement"]


def test_encoder_rows_also_run_through_stage_2_when_asked(tiny_corpus, tmp_path):
    params = make_params(tiny_corpus, tmp_path, encoder_stage2=True)
    specs = {s.name: s.stages for s in exp.encoder_specs(params)}
    # The default encoder through GPT-2's own stages at a baseline seed is the run gpt2_seed0.
    assert specs == {"encoder_default_gpt2_s1_seed0": [1], "encoder_frames_gpt2_s1_seed0": [1],
                     "encoder_frames_gpt2_s12_seed0": [1, 2]}
    assert encoder_twin(params, "default", 0, [1, 2]) == "gpt2_seed0"
    assert encoder_result_name(params, "default", 0, [1, 2]) == "gpt2_seed0"
    assert encoder_result_name(params, "frames", 0, [1, 2]) == "encoder_frames_gpt2_s12_seed0"
    # Not a twin: a seed the LM's baseline does not run, or other stages than the LM's.
    off_seed = dataclasses.replace(params, encoder_seeds=[5])
    assert "encoder_default_gpt2_s12_seed5" in {s.name for s in exp.encoder_specs(off_seed)}
    stage1_lm = dataclasses.replace(params, train={**params.train, "gpt2": dataclasses.replace(
        params.train["gpt2"], stages=[1])})
    assert encoder_twin(stage1_lm, "default", 0, [1, 2]) is None
    assert encoder_twin(stage1_lm, "default", 0, [1]) == "gpt2_seed0"
    assert {s.name for s in exp.encoder_specs(make_params(tiny_corpus, tmp_path))} == {
        "encoder_default_gpt2_s1_seed0", "encoder_frames_gpt2_s1_seed0"}
    records = exp.run_ablation(params, "encoder", name="frames")
    assert [sorted(map(str, r["best_epoch"])) for r in records] == [["1"], ["1", "2"]]


def test_a_one_seed_lm_takes_the_noise_floor_of_the_lm_with_most_seeds(study, tmp_path):

    params = dataclasses.replace(_with_reference(study[0], tmp_path), lm_seeds={"t5": [0]}, arch_lms=[])
    found = {f["id"]: f for f in fnd.run_findings(params)}
    out = Path(params.out_dir)
    gpt2 = [json.loads((out / "results" / f"gpt2_seed{s}.json").read_text())["test"]["corpus"]["cider_d"]
            for s in params.noise_seeds]
    f = found["captioning.lm.t5.vs_gpt2"]
    assert f["n_seeds"] == {"a": 1, "b": 2} and not f["paired_seeds"]
    assert f["noise_floors"]["a"] == pytest.approx(np.std(gpt2, ddof=1), abs=1e-12)
    assert found["captioning.pipeline.t5.vs_constant"]["n_seeds"]["a"] == 1


def test_unseen_test_clips_have_no_training_caption():
    manifest = pd.DataFrame({"clip_id": ["a", "b", "c", "d"], "split": ["train", "train", "test", "test"],
                             "captions": [["a dog barks"], ["rain falls"], ["a dog barks", "a dog yaps"],
                                          ["a bell rings"]]})
    assert fnd.unseen_test_clips(manifest) == {"d"}


def test_real_study_findings_name_stage2_and_unseen_clips(study, tmp_path):
    """The real corpus's study: its own ids, no trivial row, the encoder rows through stage 2
    with the narrowing of the stage-1 gap, and every pipeline finding again on unseen clips."""
    params = dataclasses.replace(_with_reference(study[0], tmp_path), encoder_stage2=True, arch_lms=[])
    exp.run_ablation(params, "encoder")  # the stage-1 rows exist: this trains the stage-2 ones
    real = fnd.STUDIES["real_captioning_study"]
    found = {f["id"]: f for f in fnd.run_findings(params, study=real)}
    assert set(found) == {
        "real_captioning.lm.t5.vs_gpt2", "real_captioning.pipeline.gpt2.vs_constant",
        "real_captioning.pipeline.t5.vs_constant", "real_captioning.decoding.gpt2.beam3_trim",
        "real_captioning.encoder.default.vs_frames", "real_captioning.encoder.default.vs_frames.stage2",
        "real_captioning.encoder.frames.stage2_narrows",
        "real_captioning.pipeline.gpt2.vs_constant.unseen", "real_captioning.pipeline.t5.vs_constant.unseen"}
    assert "tower CLAP" in found["real_captioning.encoder.default.vs_frames"]["statement"]
    # The narrowing compares the stage-1 leader's lead at stage 1 with its lead through stage 2.
    out = Path(params.out_dir)

    def corpus(name):
        return json.loads((out / "results" / f"{name}.json").read_text())["test"]["corpus"]["cider_d"]

    s1 = {e: corpus(f"encoder_{e}_gpt2_s1_seed0") for e in ("default", "frames")}
    # The default encoder's stage-1+2 row is GPT-2's baseline run (encoder_twin), not trained again.
    assert not (out / "results" / "encoder_default_gpt2_s12_seed0.json").exists()
    s12 = {"default": corpus("gpt2_seed0"), "frames": corpus("encoder_frames_gpt2_s12_seed0")}
    assert found["real_captioning.encoder.default.vs_frames.stage2"]["a"] == pytest.approx(s12["default"], abs=1e-9)
    lead, other = ("frames", "default") if s1["frames"] > s1["default"] else ("default", "frames")
    narrows = found["real_captioning.encoder.frames.stage2_narrows"]
    assert narrows["a"] == pytest.approx(s1[lead] - s1[other], abs=1e-9) and narrows["a"] >= 0
    assert narrows["b"] == pytest.approx(s12[lead] - s12[other], abs=1e-9)
    assert narrows["paired_seeds"]
    unseen = fnd.unseen_test_clips(fnd.load_dataset(params.dataset_dir).manifest)
    f = found["real_captioning.pipeline.gpt2.vs_constant.unseen"]
    assert f["n_items"] == len(unseen) and "no training clip has" in f["statement"]


def test_encoder_rows_can_train_at_their_own_search(tiny_corpus, tmp_path):
    """encoder_lr_rows: a listed encoder row reads its own search (lr_check/<row>/search), the
    default encoder and unlisted rows their LM's; an unfinished own search is refused, naming
    its stage; a finished one's LRs are the run's."""
    from clapcap.experiments.captioning.plan import lr_row, lr_source, run_configs
    from clapcap.utils.io import write_json

    params = make_params(tiny_corpus, tmp_path, use_lr_search=True, encoder_lr_rows=["encoder_frames"])
    specs = {s.name: s for s in exp.encoder_specs(params)}
    frames, default = specs["encoder_frames_gpt2_s1_seed0"], specs["encoder_default_gpt2_s1_seed0"]
    out = Path(params.out_dir)
    assert lr_row(frames) == "encoder_frames" and lr_row(default) == "encoder_default"
    assert lr_source(params, frames) == out / "lr_check" / "encoder_frames" / "search"
    assert lr_source(params, default) == out / "lr_search" / "gpt2"
    with pytest.raises(ValueError, match=r"encoder_frames is in encoder_lr_rows.*run real_caption_lr_check@encoder_frames"):
        run_configs(params, frames)
    write_json(out / "lr_check" / "encoder_frames" / "search" / "best.json",
               {"stage1_lr_projection": 0.123, "stage2_lr_projection": 0.0456, "stage2_lr_lm": 0.000789})
    _, train = run_configs(params, frames)
    assert (train.stage1.lr_projection, train.stage2.lr_projection, train.stage2.lr_lm) == (0.123, 0.0456, 0.000789)
    shared = dataclasses.replace(params, encoder_lr_rows=[])
    assert lr_source(shared, frames) == out / "lr_search" / "gpt2"
    with pytest.raises(ConfigError, match="not encoder rows of the study"):
        make_params(tiny_corpus, tmp_path, use_lr_search=True, encoder_lr_rows=["encoder_default"])
    with pytest.raises(ConfigError, match="must be in lr_search_lms"):
        make_params(tiny_corpus, tmp_path, use_lr_search=True, encoder_lr_rows=["encoder_frames"], lr_search_lms=["t5"])
    with pytest.raises(ConfigError, match=r"\['encoder_frames'\] run on no seed"):  # not a bare StopIteration later
        make_params(tiny_corpus, tmp_path, use_lr_search=True, encoder_lr_rows=["encoder_frames"], encoder_seeds=[])
