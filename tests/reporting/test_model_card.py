"""Hugging Face model cards of the CLAP model folders (clapcap.reporting.model_card)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from clapcap.reporting.model_card import CardModel, ModelCardError, ModelCardParams, write_cards
from clapcap.utils.io import write_json

ROOT = Path(__file__).resolve().parents[2]


def _direction(base: float) -> dict:
    vals = {"r@1": base, "r@10": base + 0.5, "map@10": base + 0.1}
    return {**vals, "ci": {k: {"low": v - 0.01, "high": v + 0.01} for k, v in vals.items()}}


def _setup(tmp: Path) -> ModelCardParams:
    bench = {"models": {"RobustCLAP": {b: {"t2a": _direction(0.1 * i), "a2t": _direction(0.05 * i), "n_clips": 200}
                                       for i, b in enumerate(["original", "view2"], start=1)}}}
    bench["models"]["RobustCLAP"]["zero_shot"] = {"accuracy": 0.3}  # not a retrieval benchmark: left out
    write_json(tmp / "benchmark.json", bench)
    (tmp / "models" / "robust_clap" / "model").mkdir(parents=True)
    return ModelCardParams(benchmark=str(tmp / "benchmark.json"), models_dir=str(tmp / "models"),
                           models={"robust_clap": CardModel(label="RobustCLAP", summary="A test model.",
                                                            base_model="models/synth_clap")})


def test_card_is_a_hub_model_card_with_one_result_block_per_direction_and_benchmark(tmp_path):
    from huggingface_hub import ModelCard

    (path,) = write_cards(_setup(tmp_path))
    card = ModelCard.load(path)
    assert card.data.library_name == "transformers" and card.data.base_model == "models/synth_clap"
    assert card.data.datasets == ["clapcap-synthetic-corpus"]
    results = card.data.eval_results
    assert len(results) == 2 * 2 * 3  # benchmarks x directions x metrics
    blocks = {(r.task_type, r.dataset_config) for r in results}
    assert blocks == {(t, b) for t in ("text-to-audio-retrieval", "audio-to-text-retrieval")
                      for b in ("original", "view2")}
    v2 = {r.metric_name: r.metric_value for r in results if r.dataset_config == "view2"}
    assert v2["t2a r@10"] == pytest.approx(0.7) and v2["a2t r@1"] == pytest.approx(0.1)
    # model-index in the raw YAML: one entry per (direction, benchmark) block
    header = yaml.safe_load(path.read_text().split("---")[1])
    assert len(header["model-index"][0]["results"]) == 4
    assert "| view2 | t2a | 0.200 [0.190, 0.210] | 0.700 [0.690, 0.710] |" in path.read_text()


def test_a_model_or_metric_missing_from_the_benchmark_is_an_error(tmp_path):
    params = _setup(tmp_path)
    params.models["robust_clap"].label = "NoSuchModel"
    with pytest.raises(ModelCardError, match="no model 'NoSuchModel'"):
        write_cards(params)
    params.models["robust_clap"].label = "RobustCLAP"
    params.metrics = ["ndcg@10"]
    with pytest.raises(ModelCardError, match="has no 'ndcg@10'"):
        write_cards(params)
    assert not (tmp_path / "models" / "robust_clap" / "README.md").exists()


def test_stage_writes_a_card_into_every_model_folder_of_its_params():
    stage = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["model_cards"]
    p = yaml.safe_load((ROOT / "params.yaml").read_text())["model_cards"]
    assert set(stage["deps"]) == {"build/code/model_cards.json", p["benchmark"],
                                  *(f"{p['models_dir']}/{m}/model" for m in p["models"])}
    assert [next(iter(o)) for o in stage["outs"]] == [f"{p['models_dir']}/{m}/README.md" for m in p["models"]]
