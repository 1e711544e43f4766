"""Bootstrap confidence intervals and the paired bootstrap test for retrieval metrics.

Queries are resampled with replacement, independently per direction (captions for t2a,
clips for a2t); every metric of a direction is recomputed on the same resample (means of
the per-query values, the median of the best rank). The interval is the percentile
interval. The paired test resamples the *same* query indices in both systems and reports

- ``difference``: metric(A) - metric(B) on all queries;
- ``ci``: the percentile interval of the resampled differences;
- ``p_value``: two-sided, from the resampled differences shifted to mean zero under the
  null hypothesis: (1 + #{|d_b - d| >= |d|}) / (1 + n_resamples) (Koehn 2004;
  Berg-Kirkpatrick et al. 2012). Identical systems give 1.

Note: t2a captions of one clip are not independent; resampling queries follows the issue's
definition and gives slightly narrow t2a intervals when clips have several captions.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import numpy as np

from clapcap.data.dump import DumpError, EmbeddingDump
from clapcap.retrieval.metrics import PerQuery
from clapcap.retrieval.table import aggregate_values, metric

logger = logging.getLogger(__name__)

DEFAULT_RESAMPLES = 1000


_CHUNK_ELEMENTS = 5_000_000  # resample counts held at once (40 MB of int64)


def _point(values: dict[str, np.ndarray]) -> dict[str, float]:
    """Corpus metrics of one direction, as the metric table aggregates them (means, and the
    median of ``rank``); a per-item score outside the table (a captioner's) is a mean."""
    return aggregate_values(values, strict=False)


def _count_chunks(n: int, n_resamples: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Resamples as counts: (chunk, n) int64, row b = how often each query is drawn."""
    chunk = max(1, _CHUNK_ELEMENTS // n)
    for start in range(0, n_resamples, chunk):
        c = min(chunk, n_resamples - start)
        draws = rng.integers(0, n, size=(c, n)) + (np.arange(c) * n)[:, None]
        yield np.bincount(draws.ravel(), minlength=c * n).reshape(c, n)


def _resampled(values: dict[str, np.ndarray], counts: np.ndarray) -> np.ndarray:
    """Metrics of each resample, (chunk, n_metrics), columns in the order of :func:`_point`."""
    n = counts.shape[1]
    cols = []
    for name, v in values.items():
        if metric(name, strict=False).aggregate == "mean":
            cols.append(counts @ v / n)  # mean over the resample
            continue
        # Median from counts: the sorted resample's element at position p is the first
        # sorted query whose cumulative count exceeds p.
        order = np.argsort(v, kind="stable")
        cum = np.cumsum(counts[:, order], axis=1)
        lo = np.count_nonzero(cum <= (n - 1) // 2, axis=1)
        hi = np.count_nonzero(cum <= n // 2, axis=1)
        cols.append((v[order][lo] + v[order][hi]) / 2.0)
    return np.stack(cols, axis=1)


def _n_queries(values: dict[str, np.ndarray]) -> int:
    return len(next(iter(values.values())))


def _check(n_resamples: int, confidence: float) -> None:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        raise ValueError(f"n_resamples: expected a positive int, found {n_resamples!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence: expected a value in (0, 1), found {confidence!r}")


def _interval(samples: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    alpha = (1 - confidence) / 2
    return np.quantile(samples, alpha, axis=0), np.quantile(samples, 1 - alpha, axis=0)


def bootstrap_ci(per_query: PerQuery, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                 confidence: float = 0.95) -> dict[str, dict[str, dict[str, float]]]:
    """Percentile bootstrap intervals for every metric of every direction.

    Returns:
        ``{direction: {metric: {"low": x, "high": y}}}``.

    Raises:
        ValueError: on a bad ``n_resamples`` or ``confidence``.
    """
    _check(n_resamples, confidence)
    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for direction, values in per_query.items():
        names = list(_point(values))
        samples = np.concatenate([_resampled(values, counts) for counts in
                                  _count_chunks(_n_queries(values), n_resamples, rng)])  # (B, m)
        low, high = _interval(samples, confidence)
        out[direction] = {m: {"low": float(lo), "high": float(hi)}
                          for m, lo, hi in zip(names, low, high, strict=True)}
    return out


def check_same_queries(a: EmbeddingDump, b: EmbeddingDump, origin_a: str = "A",
                       origin_b: str = "B") -> None:
    """Require two dumps to hold the same clips and captions in the same order.

    Raises:
        DumpError: naming the first clip or caption row that differs.
    """
    if a.n_clips != b.n_clips or a.n_captions != b.n_captions:
        raise DumpError(f"{origin_a} has {a.n_clips} clips/{a.n_captions} captions but {origin_b} "
                        f"has {b.n_clips}/{b.n_captions}: a paired test needs the same queries")
    for name, xs, ys in (("clip_ids", a.clip_ids, b.clip_ids), ("captions", a.captions, b.captions),
                         ("caption_clip_index", list(a.caption_clip_index),
                          list(b.caption_clip_index))):
        for row, (x, y) in enumerate(zip(xs, ys, strict=True)):
            if x != y:
                raise DumpError(f"{origin_a} and {origin_b} differ in {name} at row {row}: "
                                f"{x!r} vs {y!r}; a paired test needs the same queries in the same order")


def paired_bootstrap(pq_a: PerQuery, pq_b: PerQuery, *, n_resamples: int = DEFAULT_RESAMPLES,
                     seed: int = 0, confidence: float = 0.95) -> dict[str, dict[str, dict]]:
    """Paired bootstrap test of metric(A) - metric(B) over the same queries.

    Returns:
        ``{direction: {metric: {"a", "b", "difference", "ci": {"low", "high"}, "p_value"}}}``.

    Raises:
        ValueError: when the two inputs do not have the same directions and query counts, or
            on a bad ``n_resamples``/``confidence``.
    """
    _check(n_resamples, confidence)
    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, dict]] = {}
    for direction, va in pq_a.items():
        vb = pq_b.get(direction)
        n = _n_queries(va)
        if vb is None or _n_queries(vb) != n or list(vb) != list(va):
            raise ValueError(f"{direction}: the two systems do not have the same {n} queries")
        pa, pb = _point(va), _point(vb)
        names = list(pa)
        observed = np.array([pa[m] - pb[m] for m in names])
        diffs = np.concatenate([_resampled(va, counts) - _resampled(vb, counts)
                                for counts in _count_chunks(n, n_resamples, rng)])  # (B, m)
        low, high = _interval(diffs, confidence)
        # Shift to the null (difference 0): how often is a resample as far from d as d from 0?
        extreme = (np.abs(diffs - observed) >= np.abs(observed) - 1e-12).sum(axis=0)
        p = (1 + extreme) / (1 + n_resamples)
        out[direction] = {
            m: {"a": pa[m], "b": pb[m], "difference": float(observed[i]),
                "ci": {"low": float(low[i]), "high": float(high[i])}, "p_value": float(p[i])}
            for i, m in enumerate(names)}
    return out
