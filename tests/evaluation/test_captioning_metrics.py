"""Captioning scores: aac-metrics through clapcap vs pycocoevalcap and hand-computed values."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

from clapcap.evaluation.captioning_metrics import (
    _choose_primary,
    check_caption_inputs,
    score_captions,
)

# Lower-case, punctuation-free text: the PTB tokenizer leaves it unchanged, so pycocoevalcap
# scorers can be fed the raw strings.
PREDS = {
    "c0": "a dog barks in the distance",
    "c1": "rain falls on a metal roof",
    "c2": "a man speaks while birds chirp",
    "c3": "a car engine starts and idles",
    "c4": "water flows in a small stream",
    "c5": "a crowd cheers and claps loudly",
    "c6": "someone plays a piano melody slowly",
    "c7": "wind blows through the trees",
}
REFS = {
    "c0": ["a dog is barking far away", "a dog barks in the distance while wind blows"],
    "c1": ["heavy rain hits a metal roof", "rain is falling on a tin roof"],
    "c2": ["a man talks as birds are chirping", "birds chirp while a man speaks"],
    "c3": ["an engine starts and then idles", "a car engine is started"],
    "c4": ["a stream of water flows gently", "water runs in a brook"],
    "c5": ["people cheer and applaud", "a large crowd claps and cheers"],
    "c6": ["a slow piano melody is played", "someone plays the piano"],
    "c7": ["the wind blows through leaves", "strong wind in the trees"],
}
JAVA_METRICS = ["bleu_1", "bleu_4", "meteor", "rouge_l", "cider_d"]


@pytest.fixture(scope="module")
def scored(aac_env):
    return score_captions(PREDS, REFS, metrics=JAVA_METRICS, env=aac_env, device="cpu")


def _coco_inputs():
    gts = {cid: refs for cid, refs in REFS.items()}
    res = {cid: [PREDS[cid]] for cid in REFS}
    return gts, res


def test_bleu_rouge_cider_match_pycocoevalcap(scored):
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    gts, res = _coco_inputs()
    bleu, bleu_sents = Bleu(4).compute_score(gts, res, verbose=0)
    rouge, rouge_sents = Rouge().compute_score(gts, res)
    cider, cider_sents = Cider().compute_score(gts, res)
    corpus = scored["corpus"]
    assert corpus["bleu_1"] == pytest.approx(bleu[0], abs=1e-9)
    assert corpus["bleu_4"] == pytest.approx(bleu[3], abs=1e-9)
    assert corpus["rouge_l"] == pytest.approx(rouge, abs=1e-9)
    assert corpus["cider_d"] == pytest.approx(cider, abs=1e-9)
    per = [scored["per_clip"][cid] for cid in REFS]
    np.testing.assert_allclose([p["rouge_l"] for p in per], rouge_sents, atol=1e-9)
    np.testing.assert_allclose([p["cider_d"] for p in per], cider_sents, atol=1e-9)
    np.testing.assert_allclose([p["bleu_1"] for p in per], bleu_sents[0], atol=1e-9)


def test_meteor_matches_pycocoevalcap(scored, aac_env, monkeypatch):
    from pycocoevalcap.meteor.meteor import Meteor

    # pycocoevalcap runs `java` from PATH: give it the same Java 11.
    monkeypatch.setenv("PATH", f"{Path(aac_env.java_path).parent}{os.pathsep}{os.environ['PATH']}")
    gts, res = _coco_inputs()
    scorer = Meteor()
    try:
        meteor, meteor_sents = scorer.compute_score(gts, res)
    finally:
        scorer.close() if hasattr(scorer, "close") else None
    assert scored["corpus"]["meteor"] == pytest.approx(meteor, abs=1e-9)
    np.testing.assert_allclose([scored["per_clip"][c]["meteor"] for c in REFS], meteor_sents, atol=1e-9)


def test_output_layout_and_named_fallback_primary(scored):
    assert set(scored["corpus"]) == set(JAVA_METRICS)
    assert set(scored["per_clip"]) == set(REFS)
    assert scored["unavailable"] == {}
    assert scored["primary"] == "cider_d"
    assert "fense" in scored["primary_note"]


def test_bleu1_hand_computed():
    # One clip, unigram precision 1, candidate 3 words vs closest reference 4 words:
    # BLEU-1 = BP = exp(1 - 4/3).
    out = score_captions({"a": "a dog barks"}, {"a": ["a dog barks loudly"]},
                         metrics=["bleu_1"], tokenize=False, env=None)
    assert out["corpus"]["bleu_1"] == pytest.approx(math.exp(1 - 4 / 3), abs=1e-6)


def test_missing_assets_are_reported_not_replaced(no_models, aac_env):
    out = score_captions(PREDS, REFS, tokenize=False, env=aac_env, device="cpu",
                         metrics=["cider_d", "spice", "spider", "sbert_sim", "fer", "fense"])
    assert set(out["corpus"]) == {"cider_d"}
    assert set(out["unavailable"]) == {"spice", "spider", "sbert_sim", "fer", "fense"}
    assert "stanford-corenlp-3.6.0" in out["unavailable"]["spice"]
    assert "paraphrase-TinyBERT-L6-v2" in out["unavailable"]["sbert_sim"]
    assert "echecker" in out["unavailable"]["fer"]
    assert "paraphrase-TinyBERT" in out["unavailable"]["fense"] and "echecker" in out["unavailable"]["fense"]
    assert out["primary"] == "cider_d"
    assert all(set(v) == {"cider_d"} for v in out["per_clip"].values())


def test_fense_is_primary_when_available():
    assert _choose_primary(["cider_d", "fense"]) == ("fense", None)
    primary, note = _choose_primary(["bleu_1", "cider_d"])
    assert primary == "cider_d" and "fense unavailable" in note


@pytest.mark.parametrize(
    ("preds", "refs", "message"),
    [
        (["a dog"], {"a": ["x"]}, "expected dict[str, str], found list"),
        ({"a": "x"}, [["x"]], "expected dict[str, list[str]], found list"),
        ({"a": 3}, {"a": ["x"]}, "predictions['a']: expected str, found int"),
        ({"a": "x"}, {"a": "x"}, "references['a']: expected list[str], found str"),
        ({"a": "x"}, {"a": []}, "references['a']: expected non-empty"),
        ({"a": "x"}, {"a": ["x"], "b": ["y"]}, "have no prediction: 'b'"),
        ({"a": "x", "zz": "y"}, {"a": ["x"]}, "not in references: 'zz'"),
        ({"a": "  "}, {"a": ["x"]}, "empty prediction(s): 'a'"),
        ({}, {}, "no clips to score"),
    ],
)
def test_bad_inputs_name_the_problem(preds, refs, message):
    with pytest.raises(ValueError) as err:
        check_caption_inputs(preds, refs)
    assert message in str(err.value)


def test_all_problems_reported_together():
    with pytest.raises(ValueError) as err:
        check_caption_inputs({"a": "", "x": "y"}, {"a": ["r"], "b": ["r"]})
    msg = str(err.value)
    assert "'b'" in msg and "'x'" in msg and "empty prediction(s): 'a'" in msg


def test_unknown_metric_and_bad_trim():
    with pytest.raises(ValueError, match="unknown metric"):
        score_captions({"a": "x"}, {"a": ["x"]}, metrics=["bleu"], tokenize=False)
    with pytest.raises(ValueError, match="trim_words"):
        score_captions({"a": "x"}, {"a": ["x"]}, metrics=["bleu_1"], trim_words=0, tokenize=False)


def test_trims_apply_before_scoring():
    refs = {"a": ["a dog barks. and then"]}
    out = score_captions({"a": "a dog barks. then a cat"}, refs, metrics=["bleu_1"],
                         trim_sentences=True, tokenize=False)
    # Both sides trimmed to "a dog barks." -> identical token lists.
    assert out["corpus"]["bleu_1"] == pytest.approx(1.0, abs=1e-6)
    out = score_captions({"a": "a dog barks loudly today"}, {"a": ["a dog barks"]},
                         metrics=["bleu_1"], trim_words=3, tokenize=False)
    assert out["corpus"]["bleu_1"] == pytest.approx(1.0, abs=1e-6)


def test_line_breaks_are_joined_before_scoring(aac_env, scored):
    """The PTB tokenizer refuses a line break; scoring joins whitespace runs, which leaves the
    scores of the same words unchanged."""
    broken = {cid: text.replace(" ", "\n", 1).replace(" ", "  ", 1) for cid, text in PREDS.items()}
    out = score_captions(broken, REFS, metrics=["bleu_1", "cider_d"], env=aac_env, device="cpu")
    assert out["corpus"]["cider_d"] == pytest.approx(scored["corpus"]["cider_d"], abs=1e-12)
    assert out["corpus"]["bleu_1"] == pytest.approx(scored["corpus"]["bleu_1"], abs=1e-12)


def test_bleu_2_and_3_on_request_match_pycocoevalcap_and_spider_fl_says_what_it_needs(aac_env):
    """EXTRA_METRICS (the DCASE table's) are scored only when named, with the same tokenizer."""
    from pycocoevalcap.bleu.bleu import Bleu

    out = score_captions(PREDS, REFS, metrics=["bleu_2", "bleu_3", "spider_fl"], env=aac_env, device="cpu")
    gts, res = _coco_inputs()
    bleu, _ = Bleu(4).compute_score(gts, res, verbose=0)
    assert out["corpus"]["bleu_2"] == pytest.approx(bleu[1], abs=1e-9)
    assert out["corpus"]["bleu_3"] == pytest.approx(bleu[2], abs=1e-9)
    if "spider_fl" in out["unavailable"]:  # offline: no SPICE jars / FENSE checkpoint
        assert "SPICE" in out["unavailable"]["spider_fl"] or "FENSE" in out["unavailable"]["spider_fl"]
    else:
        assert 0.0 <= out["corpus"]["spider_fl"] <= out["corpus"]["spider"]
    default = score_captions(PREDS, REFS, env=aac_env, device="cpu")
    assert "bleu_2" not in default["corpus"] and "spider_fl" not in default["unavailable"]  # not by default
