"""The real-corpus captioning study's dump and reference captioners
(clapcap.experiments.real.captioning) on synthetic tower features."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from clapcap.clap.towers import ProjectionHeads, TowerClapConfig, save_tower_clap, tower_versions
from clapcap.data.dump import load_dump, write_npz_deterministic
from clapcap.data.manifest import write_manifest
from clapcap.experiments.real.captioning import (
    RealCaptionRefsParams,
    label_captions,
    run_real_caption_refs,
    write_dump,
)
from clapcap.experiments.real.clap import load_features

CLASSES = np.array(["Dog", "Bark", "Music", "Speech"])


@pytest.fixture
def corpus(tmp_path):
    rng = np.random.default_rng(0)
    split = np.array(["train"] * 12 + ["val"] * 4 + ["test"] * 6)
    kinds = ["a dog barks", "music plays", "someone speaks"]
    captions, owner = [], []
    for i in range(len(split)):
        for j in range(2):
            captions.append(kinds[i % 3] if j == 0 else f"{kinds[i % 3]} {i}")
            owner.append(i)
    logits = np.full((len(split), 4), -4.0, dtype=np.float32)
    logits[:, 0], logits[:, 1] = 2.0, 1.9  # every clip: Dog, and Bark almost as likely
    logits[1::3, 1] = -3.0  # ... except every third, where Bark is unlikely
    clips = np.array([f"c{i}" for i in range(len(split))])
    write_npz_deterministic(tmp_path / "features.npz", {
        "clip_id": clips, "split": split, "audio": rng.standard_normal((len(split), 10)).astype(np.float32),
        "yamnet_logits": logits, "captions": np.array(captions), "caption_clip_index": np.array(owner),
        "text": rng.standard_normal((len(captions), 6)).astype(np.float32), "class_names": CLASSES})
    cfg = TowerClapConfig(audio_dim=10, text_dim=6, projection_dim=4, hidden_dim=0, init_temperature=0.07)
    save_tower_clap(ProjectionHeads(cfg), tmp_path / "model", towers=tower_versions())
    manifest = pd.DataFrame({
        "clip_id": clips, "audio_path": [f"{c}.wav" for c in clips], "duration_s": 1.0, "sample_rate": 16000,
        "split": split, "source": "synthetic", "is_audioset_eval": None,
        "captions": [[c for c, o in zip(captions, owner, strict=True) if o == i] for i in range(len(split))]})
    write_manifest(manifest, tmp_path / "corpus" / "manifest.csv")
    (tmp_path / "corpus" / "dataset.json").write_text(json.dumps({"root": ".", "source": "real_corpus"}))
    return tmp_path


def test_dump_holds_each_split_in_the_joint_space_with_yamnet_beside(corpus):
    paths = write_dump(corpus / "features.npz", corpus / "model", corpus / "dump")
    assert [p.name for p in paths] == ["train.npz", "val.npz", "test.npz"]
    f = load_features(corpus / "features.npz")
    test = load_dump(corpus / "dump" / "test.npz")
    assert test.clip_ids == [f"c{i}" for i in range(16, 22)] and len(test.captions) == 12
    assert test.audio_embeds.shape == (6, 4) and np.allclose(np.linalg.norm(test.audio_embeds, axis=1), 1, atol=1e-5)
    assert np.array_equal(test.extras["yamnet"], f["audio"][16:22])
    assert test.captions[:2] == ["music plays", "music plays 16"] and list(test.caption_clip_index[:2]) == [0, 0]


def test_label_captions_write_the_top_classes_by_rule(corpus):
    f = load_features(corpus / "features.npz")
    got = label_captions(f, ["c0", "c1"], min_ratio=0.5)
    assert got == {"c0": "the sound of dog and bark", "c1": "the sound of dog"}
    assert label_captions(f, ["c0"], min_ratio=1.0) == {"c0": "the sound of dog"}


def test_references_are_scored_and_the_overlap_is_checked(corpus):
    write_dump(corpus / "features.npz", corpus / "model", corpus / "dump")
    (corpus / "mine.json").write_text(json.dumps({f"c{i}": "a dog barks" for i in range(16, 22)}))
    params = RealCaptionRefsParams(features=str(corpus / "features.npz"), model_dir=str(corpus / "model"),
                                   dataset_dir=str(corpus / "corpus"), dump_dir=str(corpus / "dump"),
                                   out_dir=str(corpus / "out"), systems={"mine": str(corpus / "mine.json")},
                                   metrics=["bleu_1", "cider_d"])
    params.overlap.min_clips = 2
    scores = run_real_caption_refs(params)
    assert set(scores["systems"]) == {"retrieval", "labels", "mine"}
    # Every test clip's first caption ("a dog barks", ...) also captions training clips.
    assert scores["overlap"]["clips_with_a_training_caption"] == 6
    retrieval = json.loads((corpus / "out" / "predictions_retrieval.json").read_text())
    train_captions = {c for i in range(12) for c in (["a dog barks", "music plays", "someone speaks"][i % 3],
                                                      f"{['a dog barks', 'music plays', 'someone speaks'][i % 3]} {i}")}
    assert set(retrieval) == {f"c{i}" for i in range(16, 22)} and set(retrieval.values()) <= train_captions
    small = json.loads((corpus / "out" / "summary.json").read_text())  # the DVC metrics file: numbers only
    assert small["overlapping_clips"] == 6 and set(small) == {"overlapping_clips", "retrieval", "labels", "mine"}
    assert all(isinstance(v, float) for k, block in small.items() if k != "overlapping_clips" for v in block.values())
    mine = scores["systems"]["mine"]["corpus"]
    assert mine["bleu_1"] > 0 and "| mine |" in (corpus / "out" / "report.md").read_text()
    with pytest.raises(Exception, match="not found"):
        run_real_caption_refs(RealCaptionRefsParams(**{**params.__dict__, "systems": {"x": str(corpus / "no.json")}}))
