"""The embedded synthetic corpus: determinism, content-based captions, paraphrase views."""

from __future__ import annotations

import hashlib
import re

import numpy as np

from clapcap.data.config import DataParams
from clapcap.data.prepare import load_dataset, prepare_data
from clapcap.data.synth import SynthConfig, generate_corpus, make_clip
from clapcap.data.synth_text import TRAIN, VIEW2

STOP = {"a", "an", "the", "and", "is", "that", "then", "of", "in", "by", "at", "as", "there", "while"}


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z][a-z\-]*", text.lower()))


def _digest(folder) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("audio/*.wav"))}


def test_same_seed_same_bytes(tmp_path):
    cfg = SynthConfig(n_clips=6, seed=3, max_duration_s=3.0)
    generate_corpus(cfg, tmp_path / "a", progress=False)
    generate_corpus(cfg, tmp_path / "b", progress=False)
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b")
    generate_corpus(SynthConfig(n_clips=6, seed=4, max_duration_s=3.0), tmp_path / "c", progress=False)
    assert _digest(tmp_path / "a") != _digest(tmp_path / "c")


def test_clip_does_not_depend_on_corpus_size():
    a, _ = make_clip(SynthConfig(n_clips=5), 3)
    b, _ = make_clip(SynthConfig(n_clips=500), 3)
    assert np.array_equal(a, b)


def test_clips_are_in_range_and_captions_multi_positive():
    cfg = SynthConfig(n_clips=60, seed=7)
    for i in range(cfg.n_clips):
        wave, row = make_clip(cfg, i)
        assert 2.0 <= row["duration_s"] <= 10.0
        assert wave.dtype == np.float32 and np.abs(wave).max() <= 0.95
        assert len(row["captions"]) == 5 and len(set(row["captions"])) >= 3
        assert len(row["paraphrases_v1"]) == len(row["paraphrases_v2"]) == 5


def test_captions_describe_the_content():
    cfg = SynthConfig(n_clips=40, seed=2, music_fraction=0.0)
    for i in range(cfg.n_clips):
        _, row = make_clip(cfg, i)
        for ev in row["meta"]["events"]:
            for cap in row["captions"]:
                # Every caption names every event with one of its training words.
                assert any(w in cap.lower() for w in TRAIN[ev["kind"]]), (cap, ev)


def test_view2_uses_only_unseen_vocabulary():
    cfg = SynthConfig(n_clips=150, seed=0)
    train_words, v1_words, v2_words = set(), set(), set()
    for i in range(cfg.n_clips):
        _, row = make_clip(cfg, i)
        for c in row["captions"]:
            train_words |= _words(c)
        for c in row["paraphrases_v1"]:
            v1_words |= _words(c)
        for c in row["paraphrases_v2"]:
            v2_words |= _words(c)
    view2_lexicon = {w for phrases in VIEW2.values() for p in phrases for w in _words(p)} - STOP
    assert not (view2_lexicon & train_words), view2_lexicon & train_words
    assert view2_lexicon & v2_words
    # View 1 keeps the vocabulary: every content word of view 1 occurs in some caption.
    assert (v1_words - STOP) - train_words <= {"heard", "what", "after", "sounds", "plays"} | train_words


def test_music_subset_has_flag_and_aspects(tiny_corpus):
    ds = load_dataset(tiny_corpus)
    music = ds.manifest[ds.manifest["source"] == "synthetic_music"]
    other = ds.manifest[ds.manifest["source"] == "synthetic"]
    assert len(music) > 0 and music["is_audioset_eval"].map(lambda v: v in (True, False)).all()
    assert other["is_audioset_eval"].isna().all() or other["is_audioset_eval"].map(lambda v: v is None).all()
    assert all("aspect_list" in m for m in music["meta"])


def test_prepare_writes_fixed_splits(tmp_path):
    params = DataParams(out_dir=str(tmp_path / "c"), synthetic=SynthConfig(n_clips=20, max_duration_s=2.5))
    prepare_data(params, progress=False)
    first = load_dataset(tmp_path / "c").manifest.set_index("clip_id")["split"]
    params.out_dir = str(tmp_path / "d")
    prepare_data(params, progress=False)
    second = load_dataset(tmp_path / "d").manifest.set_index("clip_id")["split"]
    assert first.equals(second)
    assert first.value_counts().to_dict() == {"train": 14, "test": 4, "val": 2}
