"""The held-out-vocabulary view: view 2 rewritten in words that no training caption or view uses."""

from __future__ import annotations

import pytest

from clapcap.config import ConfigError
from clapcap.data.prepare import load_dataset
from clapcap.data.synth_text import TRAIN, VIEW2
from clapcap.paraphrase.dataset import ParaphraseParams, paraphrase_dataset
from clapcap.paraphrase.heldout import (
    COLUMN,
    HELDOUT,
    heldout_views,
    rewrite,
    substitute_words,
    words,
)


def test_rewrite_swaps_each_view2_phrase_and_fixes_articles():
    assert rewrite("One can perceive a gentle rumbling bleep on one occasion.") == \
        "One can perceive a hushed growling blip singly."
    assert rewrite("Initially an ascending whistle; subsequently a booming thud again and again.") == \
        "Initially a soaring squeal; subsequently a thunderous bang incessantly."
    assert rewrite("Bleep occurs alongside an intense klaxon.") == "Blip occurs alongside a blaring foghorn."
    assert rewrite("a melancholic motif") == "a mournful ditty"


def test_the_lexicon_is_disjoint_from_the_corpus_lexicons():
    corpus = {w for lex in (TRAIN, VIEW2) for ps in lex.values() for p in ps for w in words(p)}
    assert not substitute_words() & corpus
    assert {c: len(v) for c, v in HELDOUT.items()} == {c: len(v) for c, v in VIEW2.items()}


def test_a_leaked_word_or_an_unchanged_caption_is_refused():
    views, stats = heldout_views([["a faint pip."], None], ["a soft beep.", "a gentle bleep"])
    assert views == [["a muted ping."], None] and stats["n_captions"] == 1
    with pytest.raises(ValueError, match=r"substitute word\(s\) \['ping'\]"):
        heldout_views([["a faint pip."]], ["a ping in the training views"])
    with pytest.raises(ValueError, match="no view-2 phrase to replace"):
        heldout_views([["a dog barks."]], ["a soft beep."])


def test_paraphrase_stage_writes_the_view_on_test_only(tiny_corpus, tmp_path):
    params = ParaphraseParams(dataset_dir=str(tiny_corpus), out_dir=str(tmp_path / "p"), heldout_splits=["test"])
    report = paraphrase_dataset(params, progress=False)
    df = load_dataset(tmp_path / "p").manifest
    test, train = df[df["split"] == "test"], df[df["split"] == "train"]
    assert all(v is None for v in train[COLUMN])
    assert all(len(h) == len(c) for h, c in zip(test[COLUMN], test["captions"], strict=True))
    seen = {w for col in ("captions", "paraphrases_v1", "paraphrases_v2") for caps in train[col] for c in caps
            for w in words(c)}
    held = {w for caps in test[COLUMN] for c in caps for w in words(c)}
    assert held & substitute_words() and not held & substitute_words() & seen
    assert report["heldout"]["n_captions"] == sum(len(c) for c in test["captions"])
    with pytest.raises(ConfigError, match="backend: corpus"):
        ParaphraseParams(backend="llm", heldout_splits=["test"])
    with pytest.raises(ConfigError, match="not train"):
        ParaphraseParams(heldout_splits=["train"])
