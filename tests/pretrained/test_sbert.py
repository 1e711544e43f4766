"""sbert_sim_minilm against an independent computation with transformers (real MiniLM weights)."""

from __future__ import annotations

import numpy as np
import pytest

from clapcap.errors import InputError
from clapcap.evaluation.sbert import (
    METRIC,
    CachedSentenceModel,
    load_minilm,
    sbert_sim_minilm,
    score_predictions,
)
from clapcap.pretrained.assets import minilm_dir

CANDS = ["a dog barks twice", "thunder rumbles in the distance", "a bell rings"]
REFS = [["a dog is barking", "a puppy yaps loudly"], ["distant thunder rolls"],
        ["a church bell chimes", "a bell rings once", "metal clanging"]]


@pytest.fixture(scope="module")
def minilm():
    return load_minilm()


def _reference(cands, mrefs):
    """Independent: transformers BertModel, mean pooling over the mask, L2 norm, numpy cosine."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok, model = AutoTokenizer.from_pretrained(str(minilm_dir())), AutoModel.from_pretrained(str(minilm_dir()))

    def embed(sents):
        enc = tok(sents, padding=True, truncation=True, return_tensors="pt")
        with torch.no_grad():
            h = model(**enc).last_hidden_state  # (N, L, 384)
        m = enc["attention_mask"].unsqueeze(-1).float()
        e = ((h * m).sum(1) / m.sum(1)).numpy().astype(np.float64)
        return e / np.linalg.norm(e, axis=1, keepdims=True)

    c = embed(cands)
    return np.array([np.mean(embed(refs) @ c[i]) for i, refs in enumerate(mrefs)])


def test_matches_independent_computation(minilm):
    corpus, sents = sbert_sim_minilm(CANDS, REFS, model=minilm)
    ref = _reference(CANDS, REFS)
    np.testing.assert_allclose(sents[METRIC], ref, atol=1e-5)
    assert corpus[METRIC] == pytest.approx(ref.mean(), abs=1e-5)
    assert sents[METRIC].shape == (3,)


def test_cached_model_gives_the_same_scores_and_embeds_each_sentence_once(minilm):
    calls: list[int] = []

    class Counting:
        def __init__(self, model):
            self.model = model

        def encode(self, sents, **kw):
            calls.append(len(sents))
            return self.model.encode(sents, **kw)

        def __getattr__(self, name):
            return getattr(self.model, name)

    cached = CachedSentenceModel(Counting(minilm))
    first = sbert_sim_minilm(CANDS, REFS, model=cached)
    again = sbert_sim_minilm(CANDS[::-1], REFS[::-1], model=cached)  # every sentence seen already
    plain = sbert_sim_minilm(CANDS, REFS, model=minilm)
    assert sum(calls) == len(set(CANDS)) + len({r for refs in REFS for r in refs})
    np.testing.assert_allclose(first[1][METRIC], plain[1][METRIC], atol=1e-6)
    np.testing.assert_allclose(again[1][METRIC], plain[1][METRIC][::-1], atol=1e-6)


def test_semantic_not_ngram(minilm):
    """A paraphrase with no shared content word scores above an unrelated sentence with shared words."""
    _, s = sbert_sim_minilm(["a hound is barking", "a dog engine hums"], [["a dog barks"], ["a dog barks"]],
                            model=minilm)
    assert s[METRIC][0] > s[METRIC][1]


def test_score_predictions_sorted_ids(minilm):
    out = score_predictions({"b": CANDS[1], "a": CANDS[0]}, {"a": REFS[0], "b": REFS[1], "c": ["x"]}, model=minilm)
    assert list(out["items"]) == ["a", "b"] and out["n"] == 2
    assert out["corpus"] == pytest.approx(np.mean(list(out["items"].values())))


@pytest.mark.parametrize("cands, refs, match", [
    ("a dog", [["x"]], "expected list"),
    (["a dog"], [[]], "non-empty"),
    (["a dog", "b"], [["x"]], "2 candidates but 1"),
    ([3], [["x"]], "candidate 0: expected str"),
    (["a"], [["x", 4]], "expected str, found int"),
])
def test_bad_inputs(cands, refs, match):
    with pytest.raises(InputError, match=match):
        sbert_sim_minilm(cands, refs, model=object())


def test_missing_references():
    with pytest.raises(InputError, match="no references"):
        score_predictions({"a": "x"}, {"b": ["y"]}, model=object())
