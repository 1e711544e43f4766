"""Joining dumps to manifest captions, the trivial baseline, and the CLI."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import yaml
from caption_fixtures import TINY_MODEL, make_dump

from clapcap.captioning.data import load_caption_split, most_common_caption, trivial_baseline
from clapcap.data.dump import DumpError
from clapcap.data.prepare import load_dataset


@pytest.fixture(scope="module")
def dumps(tiny_corpus, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cap_data")
    return make_dump(tiny_corpus, tmp / "d.npz"), make_dump(tiny_corpus, tmp / "f.npz", dim=6, frames=4)


def test_split_join_file_and_folder(dumps, tiny_corpus, tmp_path):
    manifest = load_dataset(tiny_corpus).manifest
    train = load_caption_split(dumps[0], manifest, "train")
    rows = manifest[manifest["split"] == "train"]
    assert train.clip_ids == list(rows["clip_id"]) and train.embeds.shape == (len(rows), 16)
    idx, caps = train.pairs()
    assert len(idx) == len(caps) == sum(len(c) for c in rows["captions"])
    assert caps[0] in train.captions[idx[0]]
    folder = tmp_path / "per_split"
    folder.mkdir()
    shutil.copy(dumps[0], folder / "val.npz")  # <dump folder>/<split>.npz layout
    val = load_caption_split(folder, manifest, "val")
    assert val.references() == dict(zip(val.clip_ids, val.captions, strict=True))


def test_frame_level_extra_is_mean_pooled(dumps, tiny_corpus):
    manifest = load_dataset(tiny_corpus).manifest
    split = load_caption_split(dumps[1], manifest, "test", embedding_key="audio_frames")
    frames = np.load(dumps[1])["audio_frames"]
    ids = [str(c) for c in np.load(dumps[1])["clip_ids"]]
    assert np.allclose(split.embeds[0], frames[ids.index(split.clip_ids[0])].mean(axis=0), atol=1e-6)


def test_join_errors_name_the_problem(dumps, tiny_corpus):
    manifest = load_dataset(tiny_corpus).manifest
    with pytest.raises(DumpError, match="no array 'clap_frames'"):
        load_caption_split(dumps[0], manifest, "train", embedding_key="clap_frames")
    with pytest.raises(ValueError, match="no clips in split 'dev'"):
        load_caption_split(dumps[0], manifest, "dev")
    other = manifest.copy()
    other.loc[other.index[other["split"] == "train"][0], "clip_id"] = "ghost01"
    with pytest.raises(ValueError, match="ghost01"):
        load_caption_split(dumps[0], other, "train")


def test_most_common_caption_baseline():
    caps = [["a beep.", "a tone."], ["a tone.", "a hum."], ["a beep.", "a tone."]]
    assert most_common_caption(caps) == "a tone."
    assert most_common_caption([["b."], ["a."]]) == "a."  # ties: alphabetical
    with pytest.raises(ValueError, match="no captions"):
        most_common_caption([[]])


def test_trivial_baseline_predicts_one_caption(dumps, tiny_corpus):
    manifest = load_dataset(tiny_corpus).manifest
    train = load_caption_split(dumps[0], manifest, "train")
    preds = trivial_baseline(train, ["x", "y"])
    assert preds == {"x": most_common_caption(train.captions), "y": most_common_caption(train.captions)}


def test_cli_train_generate_and_group(dumps, tiny_corpus, tmp_path, monkeypatch):
    from caption_fixtures import fake_score_captions

    from clapcap.cli import main

    monkeypatch.setattr("clapcap.captioning.evaluate.score_captions", fake_score_captions)
    train = {"batch_size": 32, "lm_pretrain_epochs": 0, "stage1": {"epochs": 1}, "stage2": {"epochs": 1}}
    params = {"captioning": {"dataset_dir": str(tiny_corpus), "dump": str(dumps[0]), "out_dir": str(tmp_path / "out"),
                             "lms": ["gpt2"], "models": {"gpt2": {"decoder": "gpt2", **TINY_MODEL}},
                             "train": {"gpt2": train}, "use_lr_search": False, "noise_seeds": [0],
                             "track": False, "progress": False}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    assert main(["captioning", "train", "--lm", "gpt2", "--params", str(tmp_path / "params.yaml")]) == 0
    ckpt = tmp_path / "out" / "runs" / "gpt2_seed0" / "stage2" / "best"
    out = tmp_path / "pred.json"
    assert main(["captioning", "generate", "--checkpoint", str(ckpt), "--dump", str(dumps[0]), "--out", str(out),
                 "--strategy", "beam", "--num-beams", "2", "--trim-words", "3"]) == 0
    preds = json.loads(out.read_text())
    assert len(preds) == 40 and all(len(c.split()) <= 3 for c in preds.values())
    assert main(["captioning", "summary", "--params", str(tmp_path / "params.yaml")]) == 0
    assert (tmp_path / "out" / "summary.md").is_file()
    assert main(["captioning", "generate", "--checkpoint", str(tmp_path), "--dump", str(dumps[0]),
                 "--out", str(out)]) == 2  # not a saved captioner: a clear error, exit 2


def test_frame_mask_excludes_padding(tiny_corpus, tmp_path):
    from clapcap.captioning.data import embeddings_by_clip
    from clapcap.data.dump import load_dump, save_dump

    dump = load_dump(make_dump(tiny_corpus, tmp_path / "m.npz", dim=4, frames=3))
    frames = dump.extras["audio_frames"]
    frames[:, 2, :] = 1e6  # padding frame
    mask = np.ones(frames.shape[:2], dtype=bool)
    mask[:, 2] = False
    dump.extras["audio_frame_mask"] = mask
    save_dump(dump, tmp_path / "m.npz")
    by_clip = embeddings_by_clip(tmp_path / "m.npz", embedding_key="audio_frames")
    assert np.allclose(by_clip[dump.clip_ids[0]], frames[0, :2].mean(axis=0), atol=1e-5)
