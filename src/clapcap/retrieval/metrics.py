"""Vectorised text-to-audio (t2a) and audio-to-text (a2t) retrieval metrics.

Definitions (docs/retrieval_metrics.md has the long form and worked examples):

- ``sim`` is (n_captions, n_clips): the dot product of L2-normalised embeddings.
  :func:`evaluate_dump` computes it in float64 and rounds it to float32, the precision the
  embeddings are stored in; two scores are tied when these float32 values are equal.
- t2a: a query is a caption (a row of ``sim``); its single positive is the clip
  ``caption_clip_index[q]``. a2t: a query is a clip (a column of ``sim``); its positives are
  all captions ``q`` with ``caption_clip_index[q] == clip``.
- Ranks are 1-based and **pessimistic**: a positive ranks below every non-positive with an
  equal score. Tied positives take consecutive positions (which one comes first does not
  change any metric). A constant encoder therefore ranks every positive last. The rule is
  :mod:`clapcap.retrieval.ranking`, shared with every other recall and AP of the library.
- ``r@k``: fraction of queries whose best-ranked positive has rank <= k
  (ranx ``hit_rate@k``, trec_eval ``success_k``).
- ``map``: mean over queries of AP = (1/|P|) * sum over positives p of precision at rank(p),
  on the full ranking (trec_eval ``map``, ranx ``map``).
- ``map@10``: the same sum restricted to positives with rank <= 10, still divided by |P|
  (trec_eval ``map_cut_10``, ranx ``map@10``).
- ``mrr``: mean of 1 / rank of the best positive (trec_eval ``recip_rank``, ranx ``mrr``).
- ``median_rank``: ``numpy.median`` of the best positive's rank (the mean of the two middle
  values for an even number of queries).

The cut-off family (``ndcg@k``, ``precision@k``, ``recall@k``, ``mrr@k``, ``map@k``) is
:mod:`clapcap.retrieval.ir_metrics`, on the ranks of :func:`ranked_dump`.

``laion_compatible=True`` replaces only a2t ``map@10`` by LAION-CLAP's formula
(``laion_clap/training/train.py``, ``evaluate_clotho_audiocaps``): the positives' ranks are
taken in caption order (not sorted), those <= 10 are kept, and sum_j j / rank_j over them is
divided by |P| (LAION hard-codes 5, Clotho's caption count). A clip can score above 1.

Memory is bounded: similarities are computed or sliced in blocks of at most
``max_block_bytes``; peak memory is the embeddings plus one block (about 750 MiB for 10k
clips x 50k captions x 512-d with the default 256 MiB block).

Speed: :func:`per_query_dump` screens scores with one float32 matrix product and recomputes
only near-ties in float64 (:mod:`clapcap.retrieval.screen`), with the numbers of the float64
path (``screen=False``); ``device`` runs the float64 path through torch
(:mod:`clapcap.retrieval.torch_path`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np

from clapcap.data.dump import DumpError, EmbeddingDump, normalize
from clapcap.retrieval import table
from clapcap.retrieval.ranking import (
    Ranked,
    average_precision,
    best_rank,
    count_at_least,
    rank_positives,
    single_positive_ranks,
)
from clapcap.retrieval.screen import Counts, NearTieOverflow, screened_counts

logger = logging.getLogger(__name__)

DIRECTIONS = ("t2a", "a2t")
DEFAULT_KS = (1, 5, 10)
AP_CUTOFF = 10
DEFAULT_BLOCK_BYTES = 256 * 2**20

# direction -> per-query metric name -> (n_queries,) float64 values
PerQuery = dict[str, dict[str, np.ndarray]]
BlockFn = Callable[[int, int], np.ndarray]


def metric_names(ks: Sequence[int] = DEFAULT_KS) -> list[str]:
    """Names of the aggregated metrics of one direction, in output order (:func:`clapcap.retrieval.table.core`)."""
    return [m.name for m in table.core(ks)]


def chance_recall(captions_per_clip: Sequence[int], k: int) -> dict[str, float]:
    """Expected R@k of a random ranking of ``len(captions_per_clip)`` clips: ``t2a`` is
    ``min(k, n) / n`` (one relevant clip per caption); ``a2t`` is ``1 - C(M - c, k) / C(M, k)``
    averaged over clips (``M`` captions in all, ``c`` of them the clip's own), the probability
    that a random ranking puts one of the clip's captions in the top ``k``.

    Raises:
        ValueError: with no clips or ``k < 1``.
    """
    from math import comb

    counts = [int(c) for c in captions_per_clip]
    n, m = len(counts), sum(counts)
    if n == 0 or k < 1:
        raise ValueError(f"chance_recall: need clips and k >= 1, found {n} clips, k={k}")
    a2t = float(np.mean([1.0 - comb(m - c, k) / comb(m, k) for c in counts])) if k <= m else 1.0
    return {"t2a": min(k, n) / n, "a2t": a2t}


# ----------------------------------------------------------------------------- checks
def _check_ks(ks: Sequence[int]) -> tuple[int, ...]:
    out = tuple(ks)
    if not out or any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 for k in out):
        raise ValueError(f"ks: expected positive integers, found {list(out)!r}")
    return tuple(int(k) for k in out)


def check_similarity_inputs(sim: np.ndarray, caption_clip_index: np.ndarray,
                            origin: str = "<similarity>") -> np.ndarray:
    """Validate a similarity matrix and its caption -> clip index.

    Returns:
        ``caption_clip_index`` as int64.

    Raises:
        DumpError: on a non-2-D or empty ``sim``, a length mismatch, an index outside
            ``0..n_clips-1``, a clip without caption, or a NaN/infinite score.
    """
    sim = np.asarray(sim)
    idx = np.asarray(caption_clip_index)
    if sim.ndim != 2 or sim.shape[0] == 0 or sim.shape[1] == 0:
        raise DumpError(f"{origin}: expected a non-empty (n_captions, n_clips) matrix, found shape {sim.shape}")
    if idx.shape != (sim.shape[0],):
        raise DumpError(f"{origin}: caption_clip_index has shape {idx.shape}, expected ({sim.shape[0]},)")
    if not np.issubdtype(idx.dtype, np.integer):
        raise DumpError(f"{origin}: caption_clip_index must hold integers, found {idx.dtype}")
    bad = np.flatnonzero((idx < 0) | (idx >= sim.shape[1]))
    if bad.size:
        raise DumpError(f"{origin}: caption {int(bad[0])} points to clip row {int(idx[bad[0]])}, "
                        f"outside 0..{sim.shape[1] - 1}")
    missing = np.setdiff1d(np.arange(sim.shape[1]), idx)
    if missing.size:
        raise DumpError(f"{origin}: clip row {int(missing[0])} has no caption ({missing.size} such "
                        f"clips); a2t needs at least one positive per clip")
    finite = np.isfinite(sim).all(axis=1)
    if not finite.all():
        raise DumpError(f"{origin}: similarity row {int(np.flatnonzero(~finite)[0])} has NaN or "
                        f"infinite values")
    return idx.astype(np.int64, copy=False)


# ------------------------------------------------------------------ pessimistic ranks
# The rank rule itself lives in clapcap.retrieval.ranking; these feed it block by block.
def _t2a_counts(rows: BlockFn, idx: np.ndarray, n_clips: int, block_bytes: int) -> np.ndarray:
    """For each caption: the rank of its one positive (#clips scoring >= it)."""
    n_cap = idx.shape[0]
    step = max(1, block_bytes // (n_clips * 13))  # float32 block + bool mask + float64 matmul
    ge = np.empty(n_cap, dtype=np.int64)
    for a in range(0, n_cap, step):
        b = min(a + step, n_cap)
        ge[a:b] = single_positive_ranks(rows(a, b), idx[a:b])  # block (b-a, n_clips)
    return ge


def _a2t_counts(cols: BlockFn, idx: np.ndarray, n_clips: int,
                block_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """For each caption p (a positive of clip idx[p]): its a2t score and #captions >= it."""
    n_cap = idx.shape[0]
    by_clip = np.argsort(idx, kind="stable")  # captions grouped by clip
    starts = np.searchsorted(idx[by_clip], np.arange(n_clips + 1))
    step = max(1, block_bytes // (n_cap * 12))
    score = np.empty(n_cap, dtype=np.float64)
    ge = np.empty(n_cap, dtype=np.int64)
    for a in range(0, n_clips, step):
        b = min(a + step, n_clips)
        block = cols(a, b)  # (b-a, n_captions)
        pairs = by_clip[starts[a]:starts[b]]
        for c0 in range(0, pairs.size, step):  # gathered rows stay within the budget
            sub = pairs[c0:c0 + step]
            rows = block[idx[sub] - a]  # (len(sub), n_captions)
            s = rows[np.arange(sub.size), sub]
            score[sub] = s
            ge[sub] = count_at_least(rows, s)
    return score, ge


def _per_query(query: np.ndarray, position: np.ndarray, within: np.ndarray, n_queries: int,
               ks: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Per-query metrics from pairs sorted by (query, position) (see :class:`clapcap.retrieval.ranking.Ranked`)."""
    best = best_rank(query, position, n_queries)
    out = {f"r@{k}": (best <= k).astype(np.float64) for k in ks}
    out["map"] = average_precision(query, position, within, n_queries)
    out[f"map@{AP_CUTOFF}"] = average_precision(query, position, within, n_queries, AP_CUTOFF)
    out["mrr"] = 1.0 / best
    out["rank"] = best
    return out


def _laion_map_at_10(idx: np.ndarray, caption_position: np.ndarray, n_clips: int) -> np.ndarray:
    """LAION-CLAP's a2t mAP@10: ranks taken in caption order, unsorted (see module doc)."""
    order = np.argsort(idx, kind="stable")  # captions of a clip in dump order
    q, pos = idx[order], caption_position[order]
    kept = pos <= AP_CUTOFF
    csum = np.cumsum(kept)
    first = np.searchsorted(q, np.arange(n_clips))
    before = np.concatenate([[0], csum])[first][q]  # kept count before each clip's group
    j = csum - before  # 1-based index among the clip's kept positives, caption order
    contrib = np.where(kept, j / pos, 0.0)
    n_pos = np.bincount(q, minlength=n_clips)
    return np.bincount(q, weights=contrib, minlength=n_clips) / n_pos


def _exact_counts(rows: BlockFn, cols: BlockFn, idx: np.ndarray, n_clips: int,
                  block_bytes: int) -> Counts:
    """Counts from similarity blocks given in full (the float64 path, or a given matrix)."""
    ge_t2a = _t2a_counts(rows, idx, n_clips, block_bytes)
    score, ge_a2t = _a2t_counts(cols, idx, n_clips, block_bytes)
    return Counts(ge_t2a, score, ge_a2t)


def _ranked(counts: Counts, idx: np.ndarray) -> dict[str, Ranked]:
    """The (query, positive) pairs of both directions with their pessimistic ranks."""
    n_cap = idx.shape[0]
    captions = np.arange(n_cap)
    # One positive per caption: its rank is the count of clips >= it (ties pessimistic).
    t2a = Ranked(captions, captions, counts.t2a, np.ones(n_cap, dtype=np.int64))
    return {"t2a": t2a, "a2t": rank_positives(idx, counts.score, counts.a2t)}


def _compute(counts: Counts, idx: np.ndarray, n_clips: int, ks: tuple[int, ...],
             laion_compatible: bool) -> PerQuery:
    n_cap = idx.shape[0]
    pairs = _ranked(counts, idx)
    t2a = _per_query(pairs["t2a"].query, pairs["t2a"].rank, pairs["t2a"].within, n_cap, ks)
    ranked = pairs["a2t"]
    a2t = _per_query(ranked.query, ranked.rank, ranked.within, n_clips, ks)
    if laion_compatible:
        caption_position = np.empty(n_cap, dtype=np.int64)
        caption_position[ranked.order] = ranked.rank
        a2t[f"map@{AP_CUTOFF}"] = _laion_map_at_10(idx, caption_position, n_clips)
    return {"t2a": t2a, "a2t": a2t}


# --------------------------------------------------------------------------- public API
def per_query_metrics(sim: np.ndarray, caption_clip_index: np.ndarray, *,
                      ks: Sequence[int] = DEFAULT_KS, laion_compatible: bool = False,
                      max_block_bytes: int = DEFAULT_BLOCK_BYTES) -> PerQuery:
    """Per-query metrics for a given similarity matrix.

    Args:
        sim: (n_captions, n_clips) scores; ties are exact equality of these values.
        caption_clip_index: (n_captions,) clip row of each caption.

    Returns:
        ``{"t2a": {...}, "a2t": {...}}``, each mapping ``r@k``, ``map``, ``map@10``, ``mrr``
        and ``rank`` (best positive's rank) to a float64 array over that direction's queries
        (captions for t2a, clips for a2t).

    Raises:
        DumpError: on malformed inputs (see :func:`check_similarity_inputs`).
        ValueError: on bad ``ks``.
    """
    ks = _check_ks(ks)
    sim = np.asarray(sim)
    idx = check_similarity_inputs(sim, caption_clip_index)
    counts = _exact_counts(lambda a, b: sim[a:b], lambda a, b: np.ascontiguousarray(sim[:, a:b].T),
                           idx, sim.shape[1], max_block_bytes)
    return _compute(counts, idx, sim.shape[1], ks, laion_compatible)


def per_query_dump(dump: EmbeddingDump, *, ks: Sequence[int] = DEFAULT_KS,
                   laion_compatible: bool = False, max_block_bytes: int = DEFAULT_BLOCK_BYTES,
                   origin: str = "<dump>", screen: bool = True,
                   device: str | None = None) -> PerQuery:
    """Per-query metrics of a dump, computing similarities block by block.

    Args:
        screen: compare scores through one float32 matrix product and check only the
            near-ties in float64 (:mod:`clapcap.retrieval.screen`; same numbers, about 2x
            faster on a CPU). False computes every similarity in float64 (the reference path).
        device: None evaluates with numpy on the CPU. A torch device (``"cuda"``,
            ``"cuda:1"``, ``"cpu"``) evaluates through torch there, in float64 (same numbers;
            :mod:`clapcap.retrieval.torch_path`). ``evaluate.resolve_device`` maps a compute
            setting (``auto``/``cpu``/``cuda``) to this.

    Raises:
        DumpError: on an invalid dump (shapes, index range, NaN/inf, empty, uncaptioned clip).
    """
    ks = _check_ks(ks)
    counts, idx = _checked_dump_counts(dump, max_block_bytes, origin=origin, screen=screen,
                                       device=device)
    return _compute(counts, idx, dump.n_clips, ks, laion_compatible)


def ranked_dump(dump: EmbeddingDump, *, max_block_bytes: int = DEFAULT_BLOCK_BYTES,
                origin: str = "<dump>", screen: bool = True,
                device: str | None = None) -> dict[str, Ranked]:
    """The pessimistic rank of every (query, positive) pair of a dump, per direction.

    The ranks every metric of :func:`per_query_dump` is built on, for metrics computed
    elsewhere (:mod:`clapcap.retrieval.ir_metrics`). ``screen`` and ``device`` as in
    :func:`per_query_dump` (same numbers).

    Returns:
        ``{"t2a": Ranked, "a2t": Ranked}`` (:class:`clapcap.retrieval.ranking.Ranked`): t2a
        queries are the captions (one pair each), a2t queries the clips (one pair per caption).

    Raises:
        DumpError: on an invalid dump (as :func:`per_query_dump`).
    """
    counts, idx = _checked_dump_counts(dump, max_block_bytes, origin=origin, screen=screen,
                                       device=device)
    return _ranked(counts, idx)


def ranked_similarity(sim: np.ndarray, caption_clip_index: np.ndarray, *,
                      max_block_bytes: int = DEFAULT_BLOCK_BYTES) -> dict[str, Ranked]:
    """:func:`ranked_dump` for a given (n_captions, n_clips) matrix (ties: equal values).

    Raises:
        DumpError: on malformed inputs (see :func:`check_similarity_inputs`).
    """
    sim = np.asarray(sim)
    idx = check_similarity_inputs(sim, caption_clip_index)
    counts = _exact_counts(lambda a, b: sim[a:b], lambda a, b: np.ascontiguousarray(sim[:, a:b].T),
                           idx, sim.shape[1], max_block_bytes)
    return _ranked(counts, idx)


def _checked_dump_counts(dump: EmbeddingDump, block_bytes: int, *, origin: str, screen: bool,
                         device: str | None) -> tuple[Counts, np.ndarray]:
    """Validate ``dump`` and count, per positive pair, the candidates scoring >= it."""
    dump.validate(origin, require_every_clip_captioned=True)
    audio, text = normalize(dump.audio_embeds), normalize(dump.text_embeds)
    zero = int((np.linalg.norm(audio, axis=1) == 0).sum() + (np.linalg.norm(text, axis=1) == 0).sum())
    if zero:
        logger.warning("%s: %d all-zero embedding rows; they tie with everything", origin, zero)
    idx = np.asarray(dump.caption_clip_index, dtype=np.int64)
    counts = _dump_counts(text, audio, idx, block_bytes, screen=screen, device=device,
                          origin=origin)
    return counts, idx


def _dump_counts(text: np.ndarray, audio: np.ndarray, idx: np.ndarray, block_bytes: int, *,
                 screen: bool, device: str | None, origin: str) -> Counts:
    if device is not None:
        # Deferred: importing torch takes seconds, and the numpy paths do not need it.
        from clapcap.retrieval.torch_path import device_counts
        return device_counts(text, audio, idx, block_bytes=block_bytes, device=device)
    if screen:
        try:
            return screened_counts(text, audio, idx, block_bytes=block_bytes)
        except NearTieOverflow:
            logger.info("%s: many near-tied scores; computing every similarity in float64", origin)

    def rows(a: int, b: int) -> np.ndarray:
        return (text[a:b] @ audio.T).astype(np.float32)  # (b-a, n_clips)

    def cols(a: int, b: int) -> np.ndarray:
        return (audio[a:b] @ text.T).astype(np.float32)  # (b-a, n_captions)

    return _exact_counts(rows, cols, idx, audio.shape[0], block_bytes)


def aggregate(per_query: PerQuery) -> dict[str, dict[str, float]]:
    """Corpus metrics from per-query values, each as the metric table aggregates it
    (:mod:`clapcap.retrieval.table`: means, and the median of ``rank``).

    Returns:
        ``{direction: {"r@k"..., "map", "map@10", "mrr", "median_rank"}}`` as Python floats,
        in the order of the per-query keys.

    Raises:
        KeyError: for a per-query key that is no metric of the table.
    """
    return {direction: table.aggregate_values(values) for direction, values in per_query.items()}


def _summary(per_query: PerQuery, idx: np.ndarray, n_clips: int) -> dict:
    counts = np.bincount(idx, minlength=n_clips)
    agg = aggregate(per_query)
    return {"t2a": agg["t2a"], "a2t": agg["a2t"], "n_clips": int(n_clips),
            "n_captions": int(idx.shape[0]), "multi_positive": bool((counts > 1).any())}


def retrieval_metrics(sim: np.ndarray, caption_clip_index: np.ndarray, *,
                      ks: Sequence[int] = DEFAULT_KS, laion_compatible: bool = False,
                      max_block_bytes: int = DEFAULT_BLOCK_BYTES) -> dict:
    """Corpus t2a and a2t metrics of a (n_captions, n_clips) similarity matrix.

    Returns:
        ``{"t2a": {...}, "a2t": {...}, "n_clips", "n_captions", "multi_positive"}``.

    Raises:
        DumpError: on malformed inputs; ValueError: on bad ``ks``.
    """
    pq = per_query_metrics(sim, caption_clip_index, ks=ks, laion_compatible=laion_compatible,
                           max_block_bytes=max_block_bytes)
    idx = np.asarray(caption_clip_index, dtype=np.int64)
    return _summary(pq, idx, np.asarray(sim).shape[1])


def evaluate_dump(dump: EmbeddingDump, *, ks: Sequence[int] = DEFAULT_KS,
                  laion_compatible: bool = False, max_block_bytes: int = DEFAULT_BLOCK_BYTES,
                  origin: str = "<dump>", screen: bool = True, device: str | None = None) -> dict:
    """Corpus metrics of an embedding dump (the ``evaluate`` output JSON).

    ``screen`` and ``device`` as in :func:`per_query_dump` (they change the speed, not the
    numbers).

    Returns:
        ``{"t2a": {...}, "a2t": {...}, "n_clips", "n_captions", "multi_positive"}``.

    Raises:
        DumpError: on an invalid dump, naming ``origin``.
    """
    pq = per_query_dump(dump, ks=ks, laion_compatible=laion_compatible,
                        max_block_bytes=max_block_bytes, origin=origin, screen=screen,
                        device=device)
    return _summary(pq, np.asarray(dump.caption_clip_index, dtype=np.int64), dump.n_clips)


def similarity(dump: EmbeddingDump) -> np.ndarray:
    """The full (n_captions, n_clips) float32 similarity matrix of a (small) dump."""
    return (normalize(dump.text_embeds) @ normalize(dump.audio_embeds).T).astype(np.float32)
