"""The one ranking rule behind every recall and average precision in clapcap.

Used by the retrieval harness (:mod:`clapcap.retrieval.metrics`: t2a/a2t R@k, mAP, mAP@10,
MRR, median rank), the zero-shot classification of :mod:`clapcap.experiments.robust.benchmark` and the
validation recall of :func:`clapcap.clap.train.t2a_recall`. (:mod:`clapcap.retrieval.independent`
re-derives the same rule without this code: it is the parity gate's second opinion.)

The rule (docs/retrieval_metrics.md, "Ranks"):

- a query's candidates are ordered by decreasing score; ranks are 1-based;
- ties are **pessimistic**: a positive ranks below every non-positive with an equal score
  (equality of the given values, no tolerance);
- positives tied with each other take consecutive positions (which one comes first
  changes no metric; here, the order in which the pairs were given).

So the i-th positive of a query (positives sorted by decreasing score, i = 1..|P|) has

    rank_i = i + #{non-positives scoring >= it}.

It is computed without sorting the candidates: ``at_least`` counts *every* candidate scoring
>= the positive (positives included), and a run of tied positives shares its count.

Two average precisions are built on these ranks, with precision at rank_i = i / rank_i:

- :func:`average_precision` (the retrieval ``map`` / ``map@10``): the sum over positives (with
  rank <= cutoff, when a cutoff is given) divided by |P| (trec_eval ``map_cut_k``);
- :func:`average_precision_min_norm` (zero-shot ``map_norm_min@k``): the sum over positives
  with rank <= k divided by min(|P|, k), so a query whose positives fill the top k scores 1.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

DEFAULT_BLOCK_BYTES = 64 * 2**20


class Ranked(NamedTuple):
    """Ranks of (query, positive) pairs, sorted by query, then rank.

    ``order`` takes the input pairs to this order (``pairs[order]``); ``query`` is
    non-decreasing; ``rank`` is the 1-based pessimistic rank; ``within`` is i, the
    positive's 1-based index among its query's positives (all int64).
    """

    order: np.ndarray
    query: np.ndarray
    rank: np.ndarray
    within: np.ndarray


def count_at_least(scores: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    """``#{j : scores[r, j] >= threshold[r]}`` for every row r of (n, C) ``scores``, int64."""
    return np.count_nonzero(scores >= threshold[:, None], axis=1).astype(np.int64, copy=False)


def single_positive_ranks(scores: np.ndarray, positive: np.ndarray) -> np.ndarray:
    """Rank of the one positive of each row: column ``positive[r]`` of (n, C) ``scores``.

    With one positive the rank is the count of candidates scoring >= it (ties pessimistic).
    """
    return count_at_least(scores, scores[np.arange(scores.shape[0]), positive])


def rank_positives(query: np.ndarray, score: np.ndarray, at_least: np.ndarray) -> Ranked:
    """Ranks of (query, positive) pairs from their scores and ``at_least`` counts.

    Args:
        query: (n_pairs,) query of each pair (any order).
        score: (n_pairs,) the positive's score.
        at_least: (n_pairs,) #candidates of that query scoring >= the positive, positives
            included (:func:`count_at_least`).

    Sorting each query's positives by descending score, the i-th one has rank
    ``i + #negatives >= its score``; a run of tied positives shares that negative count.
    """
    order = np.lexsort((-score, query))
    q, s = query[order], score[order]
    n = q.size
    change = np.ones(n, dtype=bool)
    change[:-1] = (q[1:] != q[:-1]) | (s[1:] != s[:-1])
    run_end = np.flatnonzero(change)[np.searchsorted(np.flatnonzero(change), np.arange(n))]
    rank = at_least[order] - (run_end - np.arange(n))
    new_q = np.ones(n, dtype=bool)
    new_q[1:] = q[1:] != q[:-1]
    group_start = np.maximum.accumulate(np.where(new_q, np.arange(n), 0))
    within = np.arange(n) - group_start + 1
    assert (rank >= within).all(), "a positive cannot rank above its own index"
    return Ranked(order, q, rank, within)


def positive_ranks(scores: np.ndarray, positives: np.ndarray, *,
                   max_block_bytes: int = DEFAULT_BLOCK_BYTES) -> Ranked:
    """Ranks of every positive of a dense (n_queries, n_candidates) score matrix.

    Args:
        scores: (N, C) finite scores; ties are exact equality.
        positives: (N, C) bool; a row may have no positive (it then has no pair).

    Returns:
        A :class:`Ranked` over the pairs ``np.nonzero(positives)``.

    Raises:
        ValueError: on mismatched shapes or a non-finite score.
    """
    scores, positives = np.asarray(scores), np.asarray(positives, dtype=bool)
    if scores.ndim != 2 or scores.shape != positives.shape:
        raise ValueError(f"scores {scores.shape} and positives {positives.shape}: expected equal (N, C) shapes")
    if not np.isfinite(scores).all():
        raise ValueError("scores hold NaN or infinite values; they cannot be ranked")
    rows, cols = np.nonzero(positives)
    score = scores[rows, cols]
    at_least = np.empty(rows.size, dtype=np.int64)
    step = max(1, max_block_bytes // max(1, scores.shape[1] * (scores.itemsize + 1)))
    for a in range(0, rows.size, step):  # gathered rows stay within the budget
        at_least[a:a + step] = count_at_least(scores[rows[a:a + step]], score[a:a + step])
    return rank_positives(rows.astype(np.int64), score, at_least)


def best_rank(query: np.ndarray, rank: np.ndarray, n_queries: int) -> np.ndarray:
    """(n_queries,) float64 rank of each query's best positive.

    ``query``/``rank`` as in :class:`Ranked` (sorted by query, then rank); every query
    0..n_queries-1 needs a positive.
    """
    return rank[np.searchsorted(query, np.arange(n_queries))].astype(np.float64)


def average_precision(query: np.ndarray, rank: np.ndarray, within: np.ndarray, n_queries: int,
                      cutoff: int | None = None) -> np.ndarray:
    """(n_queries,) AP = (1/|P|) * sum of i / rank_i over positives (rank_i <= ``cutoff``).

    ``query``/``rank``/``within`` as in :class:`Ranked`. The retrieval ``map`` (no cutoff)
    and ``map@k`` (trec_eval ``map_cut_k``): the denominator is every positive of the query,
    ranked within the cutoff or not. Summed in rank order; 0 for a query without positives.
    """
    n_pos = np.bincount(query, minlength=n_queries).astype(np.float64)
    precision = within / rank
    if cutoff is not None:
        precision = np.where(rank <= cutoff, precision, 0.0)
    return np.bincount(query, weights=precision, minlength=n_queries) / np.maximum(n_pos, 1.0)


def average_precision_min_norm(scores: np.ndarray, positives: np.ndarray, k: int) -> np.ndarray:
    """(N,) AP@k = (1/min(|P|, k)) * sum of i / rank_i over positives with rank_i <= k.

    The zero-shot ``map_norm_min@k`` of (N, C) ``scores`` against bool ``positives``: a row
    whose positives fill its top min(|P|, k) ranks scores 1 (equals scikit-learn's average
    precision when all positives rank within k). 0 for a row without positives. The
    precisions are summed over the top-k rank slots of each row.
    """
    scores, positives = np.asarray(scores), np.asarray(positives, dtype=bool)
    ranked = positive_ranks(scores, positives)
    kept = ranked.rank <= k
    slots = np.zeros((scores.shape[0], min(k, scores.shape[1])))
    slots[ranked.query[kept], ranked.rank[kept] - 1] = ranked.within[kept] / ranked.rank[kept]
    n_pos = np.minimum(positives.sum(axis=1), k)
    return slots.sum(axis=1) / np.maximum(n_pos, 1)
