"""Cut-off retrieval metrics at k on clapcap's pessimistic ranks (the MTEB/TREC family).

Every value is per query, computed from the ranks of the query's positives
(:class:`clapcap.retrieval.ranking.Ranked`: the rule of docs/retrieval_metrics.md, "Ranks").
Ranks are 1-based and **pessimistic**: a positive ranks below every non-positive with an
equal score, so rank_i = i + #{non-positives scoring >= positive i} for the query's i-th
positive (positives by decreasing score). With P the query's positives (|P| >= 1), and
hits@k = #{positives with rank_i <= k}:

- ``r@k``: 1 if rank_1 <= k else 0 (trec_eval ``success_k``, MTEB ``hit_rate_at_k``). The
  same expression as :mod:`clapcap.retrieval.metrics` (one key, one definition).
- ``map@k``: (1/|P|) * sum over positives with rank_i <= k of i / rank_i, divided by *all*
  positives (trec_eval ``map_cut_k``, MTEB ``map_at_k``); :func:`ranking.average_precision`
  with ``cutoff=k``, so ``map@10`` is the harness's ``map@10``.
- ``ndcg@k``: DCG / IDCG with binary gains and a log2 discount: DCG = sum over positives with
  rank_i <= k of 1 / log2(rank_i + 1); IDCG = sum_{j=1}^{min(|P|, k)} 1 / log2(j + 1), the DCG
  of a ranking with every positive first (trec_eval ``ndcg_cut_k``, MTEB ``ndcg_at_k``).
- ``mrr@k``: 1 / rank_1 if rank_1 <= k else 0 (MTEB ``mrr_at_k``); ``mrr`` (no cut-off) is
  the harness's 1 / rank_1.
- ``recall@k``: hits@k / |P| (trec_eval ``recall_k``, MTEB ``recall_at_k``). With one
  positive (t2a) it equals ``r@k``; with several (a2t) it is <= ``r@k``. Not ``r@k``.
- ``precision@k``: hits@k / k, k fixed even when k exceeds the number of candidates
  (trec_eval ``P_k``, MTEB ``precision_at_k``), so precision@k <= |P| / k.

Ties are the only place these differ from trec_eval and MTEB: they break a tie by document
id (descending), so their value depends on the ids; ours is the worst case over tie orders
and never above theirs. Without tied scores the two agree exactly (tests/retrieval/test_ir_metrics.py
checks pytrec_eval, including with ties whose ids make trec_eval's order pessimistic).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from clapcap.retrieval.ranking import Ranked, average_precision, best_rank

# Families in output order; a key is ``<family>@<k>``.
FAMILIES = ("r", "map", "ndcg", "mrr", "recall", "precision")


def ir_metric_names(ks: Sequence[int]) -> list[str]:
    """Keys of :func:`ir_per_query` for cut-offs ``ks``: each family at each k, in order."""
    return [f"{family}@{k}" for family in FAMILIES for k in ks]


def check_ks(ks: Sequence[int]) -> tuple[int, ...]:
    """``ks`` as a tuple of distinct positive ints.

    Raises:
        ValueError: on an empty sequence, a non-integer (a bool included), k < 1 or a repeat.
    """
    out = tuple(ks)
    if not out or any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 for k in out):
        raise ValueError(f"ks: expected positive integers, found {list(out)!r}")
    if len(set(out)) != len(out):
        raise ValueError(f"ks: expected distinct cut-offs, found {list(out)!r}")
    return tuple(int(k) for k in out)


def check_ranked(ranked: Ranked, n_queries: int) -> None:
    """Check that ``ranked`` ranks at least one positive of each of ``n_queries`` queries.

    Raises:
        ValueError: naming the first violation: unequal lengths, a query outside
            0..n_queries-1, queries not sorted, a query without positive, ranks not
            increasing within a query, or a rank below the positive's index ``within``.
    """
    q, rank, within = (np.asarray(a) for a in (ranked.query, ranked.rank, ranked.within))
    if not (q.ndim == rank.ndim == within.ndim == 1 and q.size == rank.size == within.size):
        raise ValueError(f"ranked: query, rank and within must be 1-D of one length, found shapes "
                         f"{q.shape}, {rank.shape}, {within.shape}")
    if n_queries < 1 or q.size == 0:
        raise ValueError(f"ranked: expected >= 1 query with positives, found {n_queries} queries "
                         f"and {q.size} pairs")
    if q.min() < 0 or q.max() >= n_queries:
        raise ValueError(f"ranked: query ids must lie in 0..{n_queries - 1}, found {q.min()}..{q.max()}")
    if (np.diff(q) < 0).any():
        raise ValueError("ranked: pairs must be sorted by query (clapcap.retrieval.ranking.Ranked)")
    missing = np.setdiff1d(np.arange(n_queries), q)
    if missing.size:
        raise ValueError(f"ranked: query {int(missing[0])} has no positive ({missing.size} such "
                         f"queries); every query needs one")
    same = q[1:] == q[:-1]
    if (same & (np.diff(rank) <= 0)).any() or (same & (np.diff(within) != 1)).any() \
            or (within[~np.r_[False, same]] != 1).any():
        raise ValueError("ranked: within a query, ranks must increase and within count 1, 2, ...")
    if (rank < within).any():
        bad = int(np.flatnonzero(rank < within)[0])
        raise ValueError(f"ranked: pair {bad} of query {int(q[bad])} has rank {int(rank[bad])} "
                         f"below its index among positives {int(within[bad])}")


def _hits(query: np.ndarray, rank: np.ndarray, n_queries: int, k: int) -> np.ndarray:
    """(n_queries,) float64 number of positives with rank <= k."""
    return np.bincount(query, weights=(rank <= k).astype(np.float64), minlength=n_queries)


def ndcg_at_k(query: np.ndarray, rank: np.ndarray, n_queries: int, k: int) -> np.ndarray:
    """(n_queries,) nDCG@k with binary gains (module docstring); pairs as in :class:`Ranked`."""
    dcg = np.bincount(query, weights=np.where(rank <= k, 1.0 / np.log2(rank + 1.0), 0.0),
                      minlength=n_queries)
    n_pos = np.bincount(query, minlength=n_queries)
    ideal = np.cumsum(1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64)))  # IDCG by #positives
    return dcg / ideal[np.minimum(n_pos, k) - 1]


def ir_per_query(ranked: Ranked, n_queries: int, ks: Sequence[int]) -> dict[str, np.ndarray]:
    """Per-query ``r@k``, ``map@k``, ``ndcg@k``, ``mrr@k``, ``recall@k``, ``precision@k``.

    Args:
        ranked: the (query, positive) pairs of one direction, sorted by query then rank
            (:func:`clapcap.retrieval.metrics.ranked_dump`).
        n_queries: number of queries; each needs at least one positive.
        ks: cut-offs (positive, distinct; not clipped to the number of candidates).

    Returns:
        ``{name: (n_queries,) float64}`` for every name of :func:`ir_metric_names`.

    Raises:
        ValueError: on bad ``ks`` (:func:`check_ks`) or malformed pairs (:func:`check_ranked`).
    """
    ks = check_ks(ks)
    check_ranked(ranked, n_queries)
    q = np.asarray(ranked.query, dtype=np.int64)
    rank = np.asarray(ranked.rank, dtype=np.int64)
    within = np.asarray(ranked.within, dtype=np.int64)
    best = best_rank(q, rank, n_queries)
    n_pos = np.bincount(q, minlength=n_queries).astype(np.float64)
    out: dict[str, np.ndarray] = {}
    for k in ks:
        out[f"r@{k}"] = (best <= k).astype(np.float64)
    for k in ks:
        out[f"map@{k}"] = average_precision(q, rank, within, n_queries, k)
    for k in ks:
        out[f"ndcg@{k}"] = ndcg_at_k(q, rank, n_queries, k)
    for k in ks:
        out[f"mrr@{k}"] = np.where(best <= k, 1.0 / best, 0.0)
    for k in ks:
        out[f"recall@{k}"] = _hits(q, rank, n_queries, k) / n_pos
    for k in ks:
        out[f"precision@{k}"] = _hits(q, rank, n_queries, k) / k
    return out
