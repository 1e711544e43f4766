"""The shared ranking core against a brute-force definition, on random inputs full of ties.

The brute force sorts each row with Python's ``sorted`` over (-score, is_positive) — the
pessimistic rule — and walks the list. Ranks and recalls are integers/counts and must match
exactly; average precisions are compared to 1e-12 (the brute force sums with ``math.fsum``).
Before the core existed, the zero-shot AP and ``t2a_recall`` computed their own ranks; the
core reproduced both bit for bit on these inputs (and the harness on its parity inputs).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from clapcap.clap.train import t2a_recall
from clapcap.experiments.robust.benchmark import ZS_MAP, zero_shot
from clapcap.retrieval.ranking import (
    average_precision,
    average_precision_min_norm,
    best_rank,
    positive_ranks,
    single_positive_ranks,
)


def _brute_ranks(scores: np.ndarray, positives: np.ndarray) -> list[list[int]]:
    """Per row, the 1-based ranks of its positives, best first."""
    out = []
    for s, p in zip(scores.tolist(), positives.tolist(), strict=True):
        ranked = sorted(range(len(s)), key=lambda j: (-s[j], p[j]))
        out.append([r for r, j in enumerate(ranked, start=1) if p[j]])
    return out


def _brute_ap(ranks: list[int], cutoff: int | None, min_norm: bool) -> float:
    kept = [(i, r) for i, r in enumerate(ranks, start=1) if cutoff is None or r <= cutoff]
    denom = min(len(ranks), cutoff) if min_norm else len(ranks)
    return math.fsum(i / r for i, r in kept) / max(denom, 1)


def _cases(n_cases: int = 60):
    rng = np.random.default_rng(7)
    for case in range(n_cases):
        n, c = int(rng.integers(1, 40)), int(rng.integers(1, 20))
        if case % 2:  # few distinct values: ties everywhere, positives tied with negatives and each other
            scores = (rng.integers(0, int(rng.integers(1, 5)), (n, c)) / 4).astype(np.float32)
        else:
            scores = rng.standard_normal((n, c)).astype(np.float32)
        positives = rng.random((n, c)) < rng.uniform(0.05, 0.8)
        yield scores, positives


def test_positive_ranks_match_brute_force():
    for scores, positives in _cases():
        ranked = positive_ranks(scores, positives, max_block_bytes=64)  # several blocks
        brute = _brute_ranks(scores, positives)
        ours = [ranked.rank[ranked.query == q].tolist() for q in range(scores.shape[0])]
        assert ours == brute
        # within is the index among the row's positives; order maps pairs to sorted order
        rows, _ = np.nonzero(positives)
        assert (rows[ranked.order] == ranked.query).all()
        for q in range(scores.shape[0]):
            assert ranked.within[ranked.query == q].tolist() == list(range(1, len(brute[q]) + 1))


@pytest.mark.parametrize("k", [1, 3, 10, 30])
def test_average_precisions_match_brute_force(k):
    for scores, positives in _cases():
        brute = _brute_ranks(scores, positives)
        ranked = positive_ranks(scores, positives)
        n = scores.shape[0]
        min_norm = average_precision_min_norm(scores, positives, k)
        by_pos = average_precision(ranked.query, ranked.rank, ranked.within, n, k)
        full = average_precision(ranked.query, ranked.rank, ranked.within, n)
        for q in range(n):
            assert min_norm[q] == pytest.approx(_brute_ap(brute[q], k, True), abs=1e-12)
            assert by_pos[q] == pytest.approx(_brute_ap(brute[q], k, False), abs=1e-12)
            assert full[q] == pytest.approx(_brute_ap(brute[q], None, False), abs=1e-12)
            # /|P| never exceeds /min(|P|, k) (up to summation order: rank order vs rank slots)
            assert 0.0 <= by_pos[q] <= min_norm[q] + 1e-15 and min_norm[q] <= 1.0 + 1e-15


def test_single_positive_ranks_and_best_rank():
    for scores, positives in _cases():
        rng = np.random.default_rng(int(scores.shape[0]))
        col = rng.integers(0, scores.shape[1], scores.shape[0])
        one = np.zeros_like(positives)
        one[np.arange(len(col)), col] = True
        brute = [r[0] for r in _brute_ranks(scores, one)]
        assert single_positive_ranks(scores, col).tolist() == brute
        ranked = positive_ranks(scores, one)
        assert best_rank(ranked.query, ranked.rank, len(col)).tolist() == brute


def test_t2a_recall_matches_brute_force():
    rng = np.random.default_rng(3)
    for case in range(40):
        n_clips, n_caps, dim = int(rng.integers(2, 20)), int(rng.integers(1, 50)), int(rng.integers(1, 4))
        audio = rng.integers(1, 3, (n_clips, dim)).astype(np.float32)  # small integers: many ties
        idx = rng.integers(0, n_clips, n_caps)
        text = audio[idx] + (rng.integers(0, 2, (n_caps, dim)) if case % 2 else 0)
        text = text.astype(np.float32)
        a = audio / np.linalg.norm(audio, axis=1, keepdims=True)
        t = text / np.linalg.norm(text, axis=1, keepdims=True)
        sim = t @ a.T
        one = np.zeros(sim.shape, dtype=bool)
        one[np.arange(n_caps), idx] = True
        ranks = [r[0] for r in _brute_ranks(sim, one)]
        rec = t2a_recall(audio, text, idx, ks=(1, 2, 5))
        for k in (1, 2, 5):
            assert rec[f"t2a_r@{k}"] == sum(r <= k for r in ranks) / n_caps
            assert rec[f"chance@{k}"] == min(1.0, k / n_clips)


def test_zero_shot_key_and_definition():
    audio = np.eye(3)
    labels = np.eye(3)[[0, 2, 1]]
    pos = np.array([[True, True, False], [False, True, True], [False, False, True]])
    out = zero_shot(audio, labels, pos)
    assert set(out) == {ZS_MAP, "accuracy"} and ZS_MAP == "map_norm_min@10" and "map@10" not in out
    # clip 0 scores [1, 0, 0]: class 0 at rank 1, class 1 tied with the negative class 2 ranks
    # 3 (pessimistic): (1 + 2/3) / min(2, 10). Clip 2 scores [0, 1, 0]: its label ranks 3: 1/3.
    assert out[ZS_MAP].tolist() == pytest.approx([(1 + 2 / 3) / 2, (1 + 2 / 3) / 2, 1 / 3])


def test_rejects_bad_inputs():
    with pytest.raises(ValueError, match="NaN or infinite"):
        positive_ranks(np.array([[np.nan, 1.0]]), np.array([[True, False]]))
    with pytest.raises(ValueError, match="shapes"):
        positive_ranks(np.zeros((2, 3)), np.zeros((3, 2), dtype=bool))
    empty = positive_ranks(np.zeros((2, 3)), np.zeros((2, 3), dtype=bool))
    assert empty.rank.size == 0
    assert average_precision_min_norm(np.zeros((2, 3)), np.zeros((2, 3), dtype=bool), 10).tolist() == [0.0, 0.0]
