"""The permutation test of validation retrieval against chance (clapcap.clap.collapse)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from clapcap.clap.collapse import chance_test, reciprocal_rank_matrix


def _perfect(n: int, per_clip: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    audio = rng.normal(size=(n, 8))
    index = np.repeat(np.arange(n), per_clip)
    return audio, audio[index] + 0.01 * rng.normal(size=(len(index), 8)), index


def test_mrr_matches_a_direct_count_with_pessimistic_ties():
    rng = np.random.default_rng(1)
    audio, text, index = rng.normal(size=(6, 4)), rng.normal(size=(12, 4)), np.repeat(np.arange(6), 2)
    audio[3] = audio[2]  # an exact tie
    a = audio / np.linalg.norm(audio, axis=1, keepdims=True)
    t = text / np.linalg.norm(text, axis=1, keepdims=True)
    sim = t @ a.T
    rank = (sim >= sim[np.arange(12), index][:, None] - 1e-6).sum(axis=1)
    assert np.trace(reciprocal_rank_matrix(audio, text, index)) / 12 == pytest.approx((1 / rank).mean())


def test_exact_p_value_is_the_share_of_relabellings_scoring_at_least_as_well():
    rng = np.random.default_rng(2)
    audio, text, index = rng.normal(size=(5, 4)), rng.normal(size=(10, 4)), np.repeat(np.arange(5), 2)
    res = chance_test(audio, text, index)
    m = reciprocal_rank_matrix(audio, text, index)
    scores = [sum(m[i, p[i]] for i in range(5)) for p in itertools.permutations(range(5))]
    assert res.exact and res.n_permutations == 120
    assert res.p_value == pytest.approx(np.mean(np.array(scores) >= np.trace(m) - 1e-12))
    assert res.chance == pytest.approx(sum(1 / k for k in range(1, 6)) / 5)


@pytest.mark.parametrize(("n", "testable", "p"), [(4, False, 1 / 24), (5, True, 1 / 120), (6, True, 1 / 720)])
def test_perfect_retrieval_is_significant_exactly_when_the_split_allows(n, testable, p):
    res = chance_test(*_perfect(n))
    assert res.observed == 1.0 and res.p_value == pytest.approx(p)
    assert res.testable is testable and res.significant is testable


def test_large_split_uses_seeded_monte_carlo():
    res = chance_test(*_perfect(50), n_permutations=199, seed=3)
    assert not res.exact and res.p_value == pytest.approx(1 / 200) and res.significant
    assert chance_test(*_perfect(50), n_permutations=199, seed=3) == res
    assert res.chance == pytest.approx(sum(1 / k for k in range(1, 51)) / 50)


@pytest.mark.parametrize("n", [5, 8, 100])
def test_constant_embeddings_are_never_significant(n):
    index = np.repeat(np.arange(n), 5)
    res = chance_test(np.ones((n, 16)) + 1e-9 * np.arange(16), np.ones((5 * n, 16)), index)
    assert res.p_value == 1.0 and not res.significant
    assert res.observed == pytest.approx(1 / n)  # every clip ties: pessimistic rank n


def test_random_embeddings_are_rarely_significant():
    rng = np.random.default_rng(4)
    index = np.repeat(np.arange(20), 5)
    ps = [chance_test(rng.normal(size=(20, 8)), rng.normal(size=(100, 8)), index, n_permutations=99, seed=s).p_value
          for s in range(60)]
    assert np.mean(np.array(ps) < 0.05) < 0.2 and math.isclose(max(ps), 1.0, abs_tol=0.2)


def test_rejects_bad_shapes():
    with pytest.raises(ValueError, match="needs >= 2 clips"):
        chance_test(np.ones((1, 4)), np.ones((2, 4)), np.zeros(2, dtype=int))


def _two_of_six_clips_found():
    """6 one-hot clips: the captions of clips 0 and 1 find them, the other 4 captions tie on
    every clip. MRR (2 + 4/6) / 6 = 0.444 > chance 0.408, exact p = 4!/6! = 0.033 (not < 0.01)."""
    audio = np.eye(6)
    index = np.arange(6)
    text = np.vstack([audio[:2], np.ones((4, 6))])
    return audio, text, index


@pytest.mark.parametrize(("embeddings", "says", "never"), [
    (_two_of_six_clips_found(), "training not distinguishable from chance on 6 clips: ", "training collapsed"),
    ((np.eye(6), np.ones((6, 6)), np.arange(6)), "training collapsed: ", "not distinguishable"),
])
def test_check_collapse_says_collapsed_only_at_or_below_chance(tmp_path, monkeypatch, embeddings, says, never):
    """A model above chance on a 6-clip split whose test is not significant used to be
    reported as "training collapsed"."""
    import clapcap.clap.train as train

    res = chance_test(*embeddings)
    assert not res.significant and res.testable
    monkeypatch.setattr(train, "embed_cache", lambda *_a, **_k: embeddings)
    result = {"history": [{"loss": 2.0}, {"loss": 1.0}], "model_dir": str(tmp_path / "model")}
    with pytest.raises(train.TrainingCollapsed) as err:
        train.check_collapse(None, None, None, alpha=0.01, out_dir=tmp_path, split="val", lr=1e-4, result=result)
    msg = str(err.value)
    assert f"{tmp_path}: {says}" in msg and never not in msg
    assert f"t2a MRR {res.observed:.3f} vs chance {res.chance:.3f} over 6 clips" in msg
    if res.observed > res.chance:
        assert res.observed == pytest.approx((2 + 4 / 6) / 6) and res.p_value == pytest.approx(1 / 30)
        assert "6 clips are too few" in msg
