"""RobustCLAP on the real tower CLAP (clapcap.experiments.real.robust), on synthetic tower
features whose text side is a bag of hashed words: a view that swaps words moves the caption's
embedding, and only the multi-view fine-tune sees those words in training."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest

from clapcap.clap.towers import TowerClapConfig, save_tower_clap, tower_versions
from clapcap.clap.towers_train import HeadTrainParams, train_heads
from clapcap.config import ConfigError, from_dict, to_dict
from clapcap.data.dump import write_npz_deterministic
from clapcap.data.manifest import write_manifest
from clapcap.errors import InputError
from clapcap.experiments.real.clap import load_features, split_features
from clapcap.experiments.real.robust import RealRobustParams, run_real_robust, view_features

DIM = 24
SOUNDS = ["dog", "bell", "rain", "car", "bird", "drum", "horn", "wind"]
SYNONYM = {"dog": "canine", "bell": "chime", "rain": "shower", "car": "auto", "bird": "fowl", "drum": "tom",
           "horn": "klaxon", "wind": "gale"}
HELDOUT = {"dog": "hound", "bell": "gong", "rain": "drizzle", "car": "sedan", "bird": "songbird", "drum": "snare",
           "horn": "trumpet", "wind": "breeze"}


def embed(texts: list[str]) -> np.ndarray:
    """Words hashed into DIM buckets, summed, unit length (the fake frozen text tower)."""
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in text.split():
            out[i, int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIM] += 1.0
    return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture
def study(tmp_path):
    rng = np.random.default_rng(0)
    n = {"train": 96, "val": 24, "test": 32}
    split = [s for s, k in n.items() for _ in range(k)]
    sound = [SOUNDS[i % len(SOUNDS)] for i in range(len(split))]
    captions = [f"a {s} sound {i % 3}" for i, s in enumerate(sound)]
    text = embed(captions)
    mix = rng.standard_normal((DIM, 16)).astype(np.float32)
    audio = (embed([f"a {s}" for s in sound]) @ mix + 0.05 * rng.standard_normal((len(split), 16))).astype(np.float32)
    clips = [f"c{i}" for i in range(len(split))]
    labels = np.array(SOUNDS)
    label_matrix = np.array([[s == lab for lab in SOUNDS] for s in sound])
    label_matrix[:4] = False  # four unlabelled clips
    write_npz_deterministic(tmp_path / "features.npz", {
        "clip_id": np.array(clips), "split": np.array(split), "audio": audio, "captions": np.array(captions),
        "caption_clip_index": np.arange(len(split)), "text": text, "labels": labels, "label_matrix": label_matrix,
        "label_text": embed([f"the sound of a {lab}" for lab in SOUNDS])})
    view2 = [c.replace(s, SYNONYM[s]) if sp != "val" else None for c, s, sp in zip(captions, sound, split, strict=True)]
    held = [c.replace(s, HELDOUT[s]) if sp == "test" else None for c, s, sp in zip(captions, sound, split, strict=True)]
    manifest = pd.DataFrame({
        "clip_id": clips, "audio_path": [f"{c}.wav" for c in clips], "duration_s": 1.0, "sample_rate": 16000,
        "split": split, "source": "synthetic", "captions": [[c] for c in captions], "is_audioset_eval": False,
        "paraphrases_v1": [[None] for _ in clips], "paraphrases_v2": [[v] for v in view2],
        "paraphrases_heldout": [[h] if sp == "test" else None for h, sp in zip(held, split, strict=True)]})
    para = tmp_path / "paraphrased"
    write_manifest(manifest, para / "manifest.csv")
    (para / "dataset.json").write_text(json.dumps({"root": ".", "source": "paraphrased:wordnet"}))
    f = load_features(tmp_path / "features.npz")
    cfg = TowerClapConfig(audio_dim=16, text_dim=DIM, projection_dim=8, hidden_dim=0, init_temperature=0.07)
    for seed in (0, 1):
        heads, _ = train_heads(cfg, HeadTrainParams(epochs=4, batch_size=32, lr=3e-3, warmup_steps=0),
                               split_features(f, "train")[0], split_features(f, "val")[0], seed=seed)
        save_tower_clap(heads, tmp_path / "base" / f"seed_{seed}", towers=tower_versions())
    params = from_dict(RealRobustParams, {
        "features": str(tmp_path / "features.npz"), "paraphrase_dir": str(para),
        "base_model_dir": str(tmp_path / "base"), "out_dir": str(tmp_path / "out"), "seeds": [0, 1],
        "finetune": {"epochs": 3, "batch_size": 32, "lr": 3e-3, "warmup_steps": 0}, "n_resamples": 200})
    return params, tmp_path


def test_views_are_aligned_caption_by_caption(study):
    params, tmp_path = study
    f = load_features(params.features)
    views = view_features(f, params.paraphrase_dir, embed=embed)
    assert np.isnan(views["view2"][f["split"] == "val"]).all()
    assert np.isfinite(views["heldout"][f["split"] == "test"]).all()
    assert np.allclose(views["view2"][0], embed(["a canine sound 0"])[0])
    manifest = pd.read_csv(tmp_path / "paraphrased" / "manifest.csv", dtype=str, keep_default_na=False)
    manifest.loc[3, "captions"] = json.dumps(["an edited caption"])
    manifest.to_csv(tmp_path / "paraphrased" / "manifest.csv", index=False)
    with pytest.raises(InputError, match=r"clip 'c3' caption 0 does not match.*dvc repro real_paraphrase"):
        view_features(f, params.paraphrase_dir, embed=embed)


def test_robust_heads_learn_the_views_words_and_the_control_does_not(study):
    params, tmp_path = study
    metrics = run_real_robust(params, embed=embed)
    assert metrics["queries"] == {"original": 32, "view2_original": 32, "view2": 32, "heldout_original": 32,
                                  "heldout": 32}
    base, control, robust = (metrics["systems"][s] for s in ("base", "control", "robust"))
    # View 2's words are new to the base and the control (a drop), and trained on by RobustCLAP.
    assert base["view2/drop_r@10"] > 0.2 and control["view2/drop_r@10"] > 0.2
    assert robust["view2/t2a_r@10"] > control["view2/t2a_r@10"] + 0.1
    assert robust["view2/drop_r@10"] < control["view2/drop_r@10"] - 0.1
    # The held-out words are in no training text: hashed into other buckets, nobody learns them.
    assert robust["heldout/drop_r@10"] > 0
    assert base["original/t2a_r@10_per_seed"] != control["original/t2a_r@10_per_seed"]
    findings = json.loads((tmp_path / "out" / "conclusions.json").read_text())
    got = {f["id"]: f["verdict"] for f in findings["findings"]} if isinstance(findings, dict) else {
        f["id"]: f["verdict"] for f in findings}
    assert set(got) == {"real_robust.heldout_r10_vs_control", "real_robust.view2_r10_vs_control",
                        "real_robust.original_r10_not_less", "real_robust.zero_shot_not_less"}
    zs = metrics["zero_shot"]
    assert zs["clips"] == 32 and zs["labels"] == 8 and zs["chance"] == pytest.approx(1 / 8)
    assert zs["base"] > zs["chance"] and len(zs["robust_per_seed"]) == 2
    assert got["real_robust.view2_r10_vs_control"] == "holds"
    history = json.loads((tmp_path / "out" / "history.json").read_text())
    assert {(h["seed"], h["system"]) for h in history} == {(s, n) for s in (0, 1) for n in ("control", "robust")}
    assert [h["epoch"] for h in history if h["seed"] == 0 and h["system"] == "robust"] == [0, 1, 2, 3]
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| robust |" in report and "view2 drop" in report
    small = json.loads((tmp_path / "out" / "summary.json").read_text())  # the DVC metrics file: numbers only
    assert small["robust"]["heldout/t2a_r@10"] == robust["heldout/t2a_r@10"]
    assert all(isinstance(v, float) for block in small.values() for v in block.values())
    assert small["control"]["zero_shot_accuracy"] == zs["control"]


def test_view2_is_split_by_the_kind_of_word_it_changed(study):
    """The paraphrase stage's edits file says which part of speech each view changed: view 2's
    queries are measured again per kind, with a finding for its cost and for RobustCLAP's gain."""
    params, tmp_path = study
    f = load_features(params.features)
    kinds = {}
    for i, clip in enumerate(f["clip_id"]):
        pos = [["n"], ["v"], ["n", "v"]][i % 3]  # source nouns, action verbs, or both
        kinds[str(clip)] = [[["w", "x", p] for p in pos]]
    (tmp_path / "paraphrased" / "view2_edits.json").write_text(json.dumps(kinds))
    metrics = run_real_robust(params, embed=embed)
    test_rows = np.flatnonzero(f["split"] == "test")
    expect = {"source": sum(i % 3 == 0 for i in test_rows), "action": sum(i % 3 == 1 for i in test_rows)}
    assert {k: metrics["queries"][f"view2_{k}"] for k in expect} == expect  # both kinds: in neither
    base = metrics["systems"]["base"]
    assert base["view2_source/drop_r@10"] == pytest.approx(
        base["view2_source_original/t2a_r@10"] - base["view2_source/t2a_r@10"], abs=2e-6)
    findings = {f["id"] for f in json.loads((tmp_path / "out" / "conclusions.json").read_text())["findings"]}
    assert {"real_robust.kinds.source.base_drop", "real_robust.kinds.source.vs_control",
            "real_robust.kinds.action.base_drop", "real_robust.kinds.action.vs_control"} <= findings
    assert "source: as written" in (tmp_path / "out" / "report.md").read_text()


def test_robust_heads_can_train_on_another_view_source(study):
    """train_views: the fine-tune trains on another corpus's view 2 of the training captions (the
    LLM's), every measure keeps paraphrase_dir's test views, and the findings carry the run's own
    id prefix and name its views. Trained on views that change no sound word, RobustCLAP does
    worse on WordNet's view-2 words; trained on the same views as real_robust, it is real_robust."""
    params, tmp_path = study
    manifest = pd.read_csv(tmp_path / "paraphrased" / "manifest.csv", dtype=str, keep_default_na=False)
    captions = [json.loads(c)[0] for c in manifest["captions"]]
    # The "LLM" rewrites the filler words only, on training captions; no test views of its own.
    manifest["paraphrases_v2"] = [json.dumps([c.replace("a ", "one ").replace(" sound ", " noise ")])
                                  if sp == "train" else json.dumps([None])
                                  for c, sp in zip(captions, manifest["split"], strict=True)]
    manifest["paraphrases_heldout"] = ""
    llm = tmp_path / "paraphrased_llm"
    llm.mkdir()
    manifest.to_csv(llm / "manifest.csv", index=False)
    (llm / "dataset.json").write_text(json.dumps({"root": ".", "source": "paraphrased:llm"}))
    other = from_dict(RealRobustParams, {**to_dict(params), "train_views": str(llm), "views_label": "the LLM's",
                                         "name": "real_robust_llm", "out_dir": str(tmp_path / "llm_out")})
    metrics = run_real_robust(other, embed=embed)
    wordnet = run_real_robust(params, embed=embed)
    # the same test queries, WordNet's held-out view included
    assert metrics["queries"] == wordnet["queries"]
    assert metrics["systems"]["control"] == wordnet["systems"]["control"]
    # WordNet's view-2 words are trained on by real_robust only (measured here: R@10 0.359 against 0.312)
    assert wordnet["systems"]["robust"]["view2/t2a_r@10"] > metrics["systems"]["robust"]["view2/t2a_r@10"] + 0.02
    found = json.loads((tmp_path / "llm_out" / "conclusions.json").read_text())
    found = found["findings"] if isinstance(found, dict) else found
    assert {f["id"] for f in found} == {"real_robust_llm.heldout_r10_vs_control", "real_robust_llm.view2_r10_vs_control",
                                        "real_robust_llm.original_r10_not_less", "real_robust_llm.zero_shot_not_less"}
    assert all("trained on the LLM's views" in f["statement"] for f in found)
    same = from_dict(RealRobustParams, {**to_dict(params), "train_views": params.paraphrase_dir,
                                        "out_dir": str(tmp_path / "same_out")})
    assert run_real_robust(same, embed=embed)["systems"] == wordnet["systems"]
    manifest["paraphrases_v2"] = json.dumps([None])
    manifest.to_csv(llm / "manifest.csv", index=False)
    with pytest.raises(InputError, match="paraphrased_llm: no training caption has a view 2"):
        run_real_robust(other, embed=embed)
    with pytest.raises(ConfigError, match="findings id prefix"):
        from_dict(RealRobustParams, {"name": "Real Robust"})
