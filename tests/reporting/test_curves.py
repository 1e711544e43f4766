"""Plot tables for `dvc plots` (clapcap.reporting.curves) and dvc.yaml's top-level plots."""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from dvc_repo import DVC, run

from clapcap.reporting.curves import CurvesError, CurvesParams, clap_rows, write_curves
from clapcap.utils.io import write_json

ROOT = Path(__file__).resolve().parents[2]


def _build(tmp: Path) -> CurvesParams:
    hist = [{"epoch": 1, "loss": 3.0}, {"epoch": 2, "loss": 2.5, "t2a_r@10": 0.4, "chance@10": 0.1},
            {"epoch": 3, "loss": 2.0}, {"epoch": 4, "loss": 1.5, "t2a_r@10": 0.6, "chance@10": 0.1}]
    views = {"view1_t2a_r@10": 0.3, "view2_t2a_r@10": 0.2}
    robust = [{**r, **views} if "t2a_r@10" in r else r for r in hist]
    write_json(tmp / "models" / "synth_clap" / "train_result.json", {"history": hist})
    for name in ("robust_clap", "robust_control"):
        write_json(tmp / "models" / name / "train_result.json", {"history": robust})
    cap = tmp / "results" / "captioning"
    for run_name in ("gpt2_seed0", "t5_seed0", "smollm2_seed0"):
        for stage in (1, 2):
            write_json(cap / "runs" / run_name / f"stage{stage}" / "result.json",
                       {"history": [{"epoch": e, "train_loss": 1.0 / e, "val_loss": 1.1 / e} for e in (1, 2)]})
    for folder in ("lr_search/gpt2", "lr_search/t5", "lr_check/gpt2_prefix_length4/search",
                   "lr_check/gpt2_projection_depth1/search"):
        write_json(cap / folder / "best.json", {
            "stage1_trials": [{"lr_projection": 0.01, "val_loss": 0.7}, {"lr_projection": 0.001, "val_loss": 0.6}],
            "stage2_trials": [{"lr_projection": 0.001, "lr_lm": 0.003, "val_loss": 0.5}]})
    finding = {"metric": "cider_d", "effect": 0.1, "ci": {"low": -0.1, "high": 0.3}, "verdict": "within noise"}
    write_json(tmp / "reports" / "conclusions.json", {"findings": [
        {**finding, "id": "captioning.arch.gpt2.prefix_length4"},
        {**finding, "id": "robust.view2", "metric": "t2a/r@10"}]})
    return CurvesParams(models_dir=str(tmp / "models"), clap_models=["synth_clap", "robust_clap", "robust_control"],
                        captioning_dir=str(cap), caption_runs=["gpt2_seed0", "t5_seed0", "smollm2_seed0"],
                        lr_searches=["gpt2", "t5"], lr_checks=["gpt2_prefix_length4", "gpt2_projection_depth1"],
                        conclusions=str(tmp / "reports" / "conclusions.json"),
                        ablation_prefixes=["captioning.arch."], out_dir=str(tmp / "plots"))


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_clap_history_splits_into_uniform_loss_and_validation_tables(tmp_path):
    write_curves(_build(tmp_path))
    loss = _rows(tmp_path / "plots" / "clap_synth_clap_loss.csv")
    val = _rows(tmp_path / "plots" / "clap_synth_clap_val.csv")
    assert [r["epoch"] for r in loss] == ["1", "2", "3", "4"] and float(loss[3]["loss"]) == 1.5
    assert [(r["epoch"], float(r["t2a_r@10"])) for r in val] == [("2", 0.4), ("4", 0.6)]
    assert list(val[0]) == ["epoch", "chance@10", "t2a_r@10"]
    s1 = _rows(tmp_path / "plots" / "lr_gpt2_stage1.csv")
    assert [float(r["lr_projection"]) for r in s1] == [0.001, 0.01]  # sorted by LR
    assert _rows(tmp_path / "plots" / "lr_t5_stage2.csv")[0]["trial"] == "p0.001_lm0.003"
    abl = _rows(tmp_path / "plots" / "ablations.csv")
    assert [r["finding"] for r in abl] == ["captioning.arch.gpt2.prefix_length4"] and "effect_cider_d" in abl[0]


def test_an_evaluated_epoch_missing_a_metric_is_an_error_not_a_gap():
    with pytest.raises(CurvesError, match="epoch 4"):
        clap_rows([{"epoch": 2, "loss": 1.0, "a": 1.0, "b": 2.0}, {"epoch": 4, "loss": 0.5, "a": 1.0}])


def test_ablations_of_two_metrics_are_refused_and_nothing_is_written(tmp_path):
    params = _build(tmp_path)
    params.ablation_prefixes = ["captioning.", "robust."]
    with pytest.raises(CurvesError, match="one metric"):
        write_curves(params)
    assert not (tmp_path / "plots").exists()


def test_dvc_yaml_plots_render_from_the_stage_tables(tmp_path):
    """Every top-level plot of the real dvc.yaml draws from files the stage writes: `dvc plots
    show --json` fills each one, and Vega renders it (what tools/render_dvc_plot.py does)."""
    params = _build(tmp_path / "build")
    write_curves(params)
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copytree(tmp_path / "build" / "plots", repo / "plots")
    plots = yaml.safe_load((ROOT / "dvc.yaml").read_text())["plots"]
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"plots": plots}))
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    run(["git", "init", "-q"], repo, env)
    run([*DVC, "init", "-q"], repo, env)
    shutil.copytree(ROOT / ".dvc" / "plots", repo / ".dvc" / "plots")  # the project's templates
    data = json.loads(run([*DVC, "plots", "show", "--json"], repo, env))["data"]
    ids = [next(iter(p)) for p in plots]
    assert sorted(data) == sorted(ids)
    import vl_convert as vlc

    for name in ids:
        assert data[name], f"{name}: DVC found none of its columns"
        spec = data[name][0]["content"]
        assert spec["data"]["values"], name
        assert vlc.vegalite_to_png(spec).startswith(b"\x89PNG"), name
        assert "'" not in name  # dvc-render writes the title unescaped into a JS string: a quote breaks the page
        assert "<DVC_METRIC" not in json.dumps(spec), name  # every anchor filled
        labels = {spec.get("encoding", {}).get(a, {}).get("title") for a in ("x", "y")}
        assert labels.isdisjoint({"y", "dvc_inferred_y_value"}), (name, labels)  # the axes say what they show
    specs = {name: data[name][0]["content"] for name in ids}
    loss = specs["Captioner gpt2 seed 0 loss, stage 2 after stage 1"]
    series = {(v["filename"], v["field"]) for v in loss["data"]["values"]}
    assert len(series) == 4 and loss["encoding"]["color"]["field"] == "series"  # one colour per series
    s2 = [v for v in loss["data"]["values"] if v["filename"].endswith("stage2.csv")]
    assert min(int(v["run_epoch"]) for v in s2) == 3  # stage 2 follows stage 1's two epochs
    lr = specs["Stage-1 LR search, validation loss per projection LR"]
    assert lr["encoding"]["x"]["scale"]["type"] == "log"
    ablation = specs["Captioning ablations, CIDEr-D effect against the row baseline with 95 % intervals"]
    rule = ablation["layer"][0]["encoding"]
    assert rule["x"]["field"] == "ci_low" and rule["x2"]["field"] == "ci_high"  # the interval is drawn


def test_stage_deps_match_the_params_section():
    """The stage depends on exactly the files and folders its params section names (no stale or
    missing dep): the runs and LR searches by their folders, since which rows exist depends on
    the study (T5's and SmolLM2's are the full study's), and dvc.yaml is the same for both."""
    stage = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["training_curves"]
    p = yaml.safe_load((ROOT / "params.yaml").read_text())["training_curves"]
    want = {"build/code/training_curves.json", p["conclusions"]}
    want |= {f"{p['models_dir']}/{m}/train_result.json" for m in p["clap_models"]}
    # The runs, searches and the architecture rows' checks (the full study's): their folders.
    want |= {f"{p['captioning_dir']}/{folder}" for folder in ("runs", "lr_search", "lr_check")}
    assert set(stage["deps"]) == want
    full = yaml.safe_load((ROOT / "studies/full.yaml").read_text())
    for study in (p, {k.split(".", 1)[1]: v for k, v in full.items() if k.startswith("training_curves.")}):
        for key in ("caption_runs", "lr_searches"):  # each names one row under its folder
            assert study[key] and all("/" not in name for name in study[key])
    assert stage["outs"] == [{p["out_dir"]: {"cache": False}}]
