"""Offline aac-metrics assets: the jar layout, idempotence, Java checks, download failure."""

from __future__ import annotations

import pytest

from clapcap.errors import AssetError
from clapcap.evaluation import aac_assets
from clapcap.evaluation.aac_assets import (
    METEOR_JAR,
    METEOR_PARAPHRASE,
    PTB_JAR,
    SPICE_DIR,
    java_problem,
    metric_problems,
    setup_offline,
)


def test_setup_offline_layout_and_idempotent(tmp_path, caplog):
    env = setup_offline(tmp_path)
    for rel in (PTB_JAR, METEOR_JAR, METEOR_PARAPHRASE, SPICE_DIR / "spice-1.0.jar",
                SPICE_DIR / "lib" / "Meteor-1.5.jar"):
        assert (tmp_path / rel).is_file(), rel
    assert (tmp_path / SPICE_DIR / "cache").is_dir()
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with caplog.at_level("INFO"):
        again = setup_offline(tmp_path)
    assert again == env
    assert "(0 link(s) created)" in caplog.text
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_bundled_java_is_accepted(aac_env):
    assert java_problem(aac_env.java_path) is None


def test_wrong_java_version_is_rejected(tmp_path):
    fake = tmp_path / "java"
    fake.write_text('#!/bin/sh\necho \'openjdk version "17.0.2" 2022-01-18\' >&2\n')
    fake.chmod(0o755)
    reason = java_problem(str(fake))
    assert reason is not None and "Java 17" in reason and "8-13" in reason
    assert "cannot run Java" in java_problem(str(tmp_path / "missing"))


def test_meteor_unavailable_without_jars(tmp_path, aac_env):
    env = aac_assets.AacEnv(tmp_path, aac_env.java_path)
    problems = metric_problems(["bleu_1", "meteor"], env)
    assert set(problems) == {"meteor"} and "meteor-1.5.jar" in problems["meteor"]


def test_download_fails_cleanly_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(AssetError, match="HF_HUB_OFFLINE"):
        aac_assets.download_all(tmp_path)


def _fake_hf_repo(hub, repo_id):
    folder = hub / f"models--{repo_id.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text("0" * 40)
    (folder / "snapshots" / ("0" * 40)).mkdir(parents=True)
    (folder / "snapshots" / ("0" * 40) / "config.json").write_text("{}")


def test_model_metrics_found_in_local_caches(tmp_path, monkeypatch, aac_env):
    import torch

    hub, fense = tmp_path / "hub", tmp_path / "fense"
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.delenv("SENTENCE_TRANSFORMERS_HOME", raising=False)
    monkeypatch.setenv("FENSE_DATA", str(fense))
    metrics = ["sbert_sim", "fer", "fense"]
    assert set(metric_problems(metrics, aac_env)) == set(metrics)
    _fake_hf_repo(hub, aac_assets.SBERT_REPO)
    fense.mkdir()
    torch.save({"model_type": "bert-base-uncased", "num_classes": 5, "state_dict": {}},
               fense / aac_assets.FER_CHECKPOINT)
    problems = metric_problems(metrics, aac_env)
    assert "sbert_sim" not in problems
    assert "bert-base-uncased not in the Hugging Face cache" in problems["fer"]
    _fake_hf_repo(hub, "bert-base-uncased")
    assert metric_problems(metrics, aac_env) == {}
