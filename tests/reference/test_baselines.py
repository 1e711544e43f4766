"""Offline reference baselines: the retrieval captioner, and a planted leak the check catches."""

from __future__ import annotations

import json

import numpy as np

from clapcap.data.dump import EmbeddingDump, save_dump
from clapcap.evaluation.leakage import LeakageParams
from clapcap.evaluation.shared_split import dump_split, read_split_json, score_reference
from clapcap.reference.baselines import nearest_caption_predictions, planted_leak_predictions


def _dump(path, audio, text, idx, prefix):
    save_dump(EmbeddingDump(audio.astype(np.float32), text.astype(np.float32), np.asarray(idx),
                            [f"{prefix}{i}" for i in range(len(audio))], [f"{prefix} caption {j}" for j in range(len(text))]),
              path)


def test_nearest_caption_picks_closest_train_caption(tmp_path):
    eye = np.eye(3)
    _dump(tmp_path / "train.npz", eye, eye[[2, 0, 1]], [0, 1, 2], "tr")
    _dump(tmp_path / "test.npz", eye[[1, 2]] + 0.01, eye[[1, 2]], [0, 1], "te")
    preds = nearest_caption_predictions(tmp_path / "train.npz", tmp_path / "test.npz")
    # test clip 0 ~ e1, nearest train text row with e1 is caption 2; clip 1 ~ e2 -> caption 0.
    assert preds == {"te0": "tr caption 2", "te1": "tr caption 0"}


def test_planted_leak_copies_references_on_seen_clips_only(tiny_corpus, tmp_path):
    _, js = dump_split(tiny_corpus, tmp_path / "split")
    split = read_split_json(js)
    clean = {cid: "a quiet beep." for cid in split.references}
    leak = planted_leak_predictions(clean, js, seen_flag=False)
    for cid, caps in split.references.items():
        expected = caps[0] if split.flags[cid] is False else "a quiet beep."
        assert leak[cid] == expected


def test_planted_leak_is_flagged_by_the_leakage_check(tmp_path):
    rng = np.random.default_rng(0)
    words = ["beep", "hum", "siren", "bell", "drum", "chirp", "hiss", "tune"]
    rows, split_clips = [], []
    for i in range(60):
        caps = [f"a {' '.join(rng.choice(words, 3))} sound {k}" for k in range(3)]
        flag = bool(i % 2)
        split_clips.append({"clip_id": f"c{i}", "audio_path": f"a/c{i}.wav", "captions": caps, "is_audioset_eval": flag})
        rows += [f"c{i},a/c{i}.wav,{c},{flag}" for c in caps]
    csv = tmp_path / "split.csv"
    csv.write_text("clip_id,audio_path,caption,is_audioset_eval\n" + "\n".join(rows) + "\n")
    js = tmp_path / "split.json"
    js.write_text(json.dumps({"split": "test", "dataset": "x", "clips": split_clips}))
    clean = {c["clip_id"]: "a hum sound" for c in split_clips}
    leak = planted_leak_predictions(clean, js, seen_flag=False)
    (tmp_path / "leak.json").write_text(json.dumps(leak))
    out = score_reference(tmp_path / "leak.json", csv, "planted", metrics=["cider_d"],
                          leakage=LeakageParams(metric="cider_d", n_permutations=2000))
    assert out["leakage"]["verdict"] == "leaky"
