"""Vocabulary and length of generated captions: the word rule, exact counts, per-seed summary."""

from __future__ import annotations

import json

import pytest

from clapcap.experiments.captioning.vocab import (
    CaptionVocabParams,
    caption_stats,
    reference_stats,
    summarize,
    vocab_study,
    words,
)

REFS = {"a": ["A dog barks.", "A dog is barking loudly."], "b": ["Rain falls on a roof.", "Heavy rain."]}


def test_words_lowercase_and_drop_punctuation():
    assert words("A Dog's bark, then RAIN!") == ["a", "dog's", "bark", "then", "rain"]


def test_caption_stats_counts_exactly():
    stats = caption_stats({"a": "A dog barks.", "b": "A dog barks!"}, REFS)
    # one distinct caption of 3 words; all three words are reference words
    assert stats["vocab"] == 3 and stats["mean_words"] == 3.0 and stats["distinct_ratio"] == 0.5
    assert stats["vocab_precision"] == 1.0
    ref_vocab = {w for refs in REFS.values() for r in refs for w in words(r)}
    assert stats["vocab_ratio"] == pytest.approx(3 / len(ref_vocab))
    other = caption_stats({"a": "A cat meows.", "b": "Rain falls."}, REFS)
    assert other["vocab"] == 5 and other["vocab_precision"] == pytest.approx(3 / 5) and other["distinct_ratio"] == 1.0
    with pytest.raises(ValueError, match="without references"):
        caption_stats({"zzz": "x"}, REFS)


def test_reference_stats_and_summary_over_seeds():
    refs = reference_stats(REFS)
    assert refs["n_captions"] == 4 and refs["mean_words"] == pytest.approx((3 + 5 + 5 + 2) / 4)
    assert refs["vocab"] == len({w for r in REFS.values() for c in r for w in words(c)})
    runs = {"gpt2_seed0": caption_stats({"a": "A dog barks.", "b": "Rain."}, REFS),
            "gpt2_seed1": caption_stats({"a": "A dog.", "b": "Rain falls."}, REFS),
            "retrieval_captioner": caption_stats({"a": "A dog barks."}, REFS)}
    out = summarize(runs)
    assert list(out) == ["gpt2"] and out["gpt2"]["seeds"] == [0, 1]
    assert out["gpt2"]["mean_words"]["mean"] == pytest.approx(2.0) and out["gpt2"]["mean_words"]["std"] == 0.0
    assert out["gpt2"]["vocab"]["mean"] == pytest.approx(4.0)


def test_vocab_study_on_saved_caption_files(tiny_corpus, tmp_path):
    from clapcap.data.prepare import load_dataset

    test = load_dataset(tiny_corpus).split("test")
    ids = list(test["clip_id"])
    run = tmp_path / "cap" / "runs" / "gpt2_seed0"
    run.mkdir(parents=True)
    (run / "test_predictions.json").write_text(json.dumps({c: "a sound" for c in ids}))
    extra = tmp_path / "ref.json"
    extra.write_text(json.dumps({c: caps[0] for c, caps in zip(ids, test["captions"], strict=True)}))
    record = vocab_study(CaptionVocabParams(captioning_dir=str(tmp_path / "cap"), dataset_dir=str(tiny_corpus),
                                            extra={"copy_first_reference": str(extra)}, out=str(tmp_path / "v.json")))
    assert record["runs"]["gpt2_seed0"]["vocab"] == 2 and record["runs"]["gpt2_seed0"]["distinct_ratio"] == 1 / len(ids)
    assert record["runs"]["copy_first_reference"]["vocab_precision"] == 1.0
    assert record["configs"]["gpt2"]["n_seeds"] == 1
    assert json.loads((tmp_path / "v.json").read_text()) == record
