"""Exact retrieval counts from a float32 matrix product, checked in float64 where it matters.

A similarity is the float64 dot product of two L2-normalised embeddings rounded to float32
(:mod:`clapcap.retrieval.metrics`); ranks need only how each score compares with a
positive's score. Computing every score in float64 costs about four float32 products on a
CPU, so the scores are *screened*:

- every positive's score is computed exactly (:func:`exact_scores`), once;
- every other score comes from one float32 matrix product, whose error is bounded for unit
  vectors by about (D + 3) * 2**-24 whatever the summation order (Higham, *Accuracy and
  Stability of Numerical Algorithms*, 3.1): the inputs' rounding to float32 (2u), the
  D-term sum (D u) and the exact score's own rounding to float32 (u);
- a candidate whose float32 score lies outside [s - tol, s + tol] around a positive's score s
  compares with s as its exact score does; only the candidates inside that band (near-ties)
  are recomputed exactly, with the same function as the positives, so duplicates stay tied.

The counts are those of the float64 path (:func:`clapcap.retrieval.metrics.per_query_dump`
with ``screen=False``). When more than ``max_near_ties`` scores need the exact check (a
collapsed encoder ties everything), :class:`NearTieOverflow` is raised and the caller uses
the float64 path.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

U32 = 2.0 ** -24  # unit roundoff of float32
EXACT_CHUNK = 1 << 14  # rows per exact-score chunk: (chunk, D) float64 temporaries


class NearTieOverflow(RuntimeError):
    """More near-ties than the screen's budget: use the float64 path instead."""


class Counts(NamedTuple):
    """Per caption p (the pair: caption p, clip ``caption_clip_index[p]``).

    ``t2a``: #clips scoring >= the pair's score for caption p; ``score``: the pair's float32
    score (as float64); ``a2t``: #captions scoring >= it for the clip. All (n_captions,).
    """

    t2a: np.ndarray
    score: np.ndarray
    a2t: np.ndarray


def screen_tolerance(dim: int) -> float:
    """Bound on |float32 product score - float64 score rounded to float32| for unit vectors."""
    return 1.01 * (dim + 3) * U32 + 1e-30  # 1 %: second-order terms; 1e-30: float32 underflow


def exact_scores(text: np.ndarray, audio: np.ndarray, rows: np.ndarray,
                 cols: np.ndarray) -> np.ndarray:
    """float32 scores of the pairs (text[rows[i]], audio[cols[i]]), float64 dot products.

    Each pair is summed the same way (numpy's pairwise sum over the D products) wherever it
    sits in ``rows``, so equal vectors give bit-equal scores.
    """
    out = np.empty(rows.size, dtype=np.float32)
    for a in range(0, rows.size, EXACT_CHUNK):
        b = a + EXACT_CHUNK
        out[a:b] = np.add.reduce(text[rows[a:b]] * audio[cols[a:b]], axis=1)
    return out


def _edges(score: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """float32 band edges, rounded outwards so that the band holds [s - tol, s + tol]."""
    s = score.astype(np.float64)
    lo = np.nextafter((s - tol).astype(np.float32), np.float32(-np.inf))
    hi = np.nextafter((s + tol).astype(np.float32), np.float32(np.inf))
    return lo, hi


class _Slot(NamedTuple):
    """The j-th positive of every clip that has more than j: ``cols`` clips, ``caps`` captions."""

    cols: np.ndarray
    caps: np.ndarray
    dense: bool  # every clip: compare the whole block, no gather


def _slots(idx: np.ndarray, n_clips: int) -> list[_Slot]:
    by_clip = np.argsort(idx, kind="stable")
    counts = np.bincount(idx, minlength=n_clips)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    out = []
    for j in range(int(counts.max())):
        cols = np.flatnonzero(counts > j)
        out.append(_Slot(cols, by_clip[starts[cols] + j], cols.size == n_clips))
    return out


class _Screen:
    """State of one screened evaluation: exact vectors, positive scores and band edges."""

    def __init__(self, text: np.ndarray, audio: np.ndarray, idx: np.ndarray, max_near_ties: int):
        self.text, self.audio, self.idx = text, audio, idx
        self.score = exact_scores(text, audio, np.arange(idx.size), idx)  # (n_captions,)
        self.lo, self.hi = _edges(self.score, screen_tolerance(text.shape[1]))
        self.budget = max_near_ties
        self._mask = np.empty(0, dtype=bool)

    def mask(self, shape: tuple[int, int]) -> np.ndarray:
        """A reused bool buffer of ``shape`` (fresh large arrays cost page faults every block)."""
        size = shape[0] * shape[1]
        if self._mask.size < size:
            self._mask = np.empty(size, dtype=bool)
        return self._mask[:size].reshape(shape)

    def spend(self, n: int) -> None:
        self.budget -= n
        if self.budget < 0:
            raise NearTieOverflow("too many scores within the float32 screen's error bound")

    def rows(self, block: np.ndarray, a: int) -> np.ndarray:
        """t2a: #clips scoring >= caption (a + r)'s positive, for each row r of ``block``."""
        b = a + block.shape[0]
        lo, hi = self.lo[a:b, None], self.hi[a:b, None]
        mask = np.greater_equal(block, lo, out=self.mask(block.shape))
        n_lo = np.add.reduce(mask.view(np.uint8), axis=1, dtype=np.int64)
        n_hi = np.add.reduce(np.greater(block, hi, out=mask).view(np.uint8), axis=1, dtype=np.int64)
        extra = n_lo - n_hi - 1  # the positive itself always lies in its band
        assert (extra >= 0).all(), "a positive's float32 score left its error bound"
        count = n_hi + 1
        rows = np.flatnonzero(extra)
        if rows.size:
            self.spend(int(extra[rows].sum()))
            sub = block[rows]
            band = (sub >= lo[rows]) & (sub <= hi[rows])
            band[np.arange(rows.size), self.idx[a + rows]] = False  # the positive: counted
            r, c = np.nonzero(band)
            q = a + rows[r]
            ge = exact_scores(self.text, self.audio, q, c) >= self.score[q]
            count += np.bincount(rows[r], weights=ge, minlength=block.shape[0]).astype(np.int64)
        return count

    def cols(self, block: np.ndarray, a: int, slot: _Slot) -> np.ndarray:
        """a2t: for each clip of ``slot``, #captions of ``block`` scoring >= its slot positive."""
        b = a + block.shape[0]
        sub = block if slot.dense else np.take(block, slot.cols, axis=1)  # (R, m)
        lo, hi = self.lo[slot.caps], self.hi[slot.caps]
        acc = np.uint16 if block.shape[0] < 2**16 else np.int64
        mask = np.greater_equal(sub, lo, out=self.mask(sub.shape))
        n_lo = np.add.reduce(mask.view(np.uint8), axis=0, dtype=acc).astype(np.int64)
        n_hi = np.add.reduce(np.greater(sub, hi, out=mask).view(np.uint8), axis=0,
                             dtype=acc).astype(np.int64)
        own = ((slot.caps >= a) & (slot.caps < b)).astype(np.int64)  # the positive's own row
        extra = n_lo - n_hi - own
        assert (extra >= 0).all(), "a positive's float32 score left its error bound"
        count = n_hi + own
        cols = np.flatnonzero(extra)
        if cols.size:
            self.spend(int(extra[cols].sum()))
            sub = sub[:, cols]  # (R, k)
            band = (sub >= lo[cols]) & (sub <= hi[cols])
            caps = slot.caps[cols]
            mine = np.flatnonzero(own[cols])
            band[caps[mine] - a, mine] = False  # the positive: counted
            r, k = np.nonzero(band)
            ge = exact_scores(self.text, self.audio, a + r, slot.cols[cols[k]]) >= self.score[caps[k]]
            count[cols] += np.bincount(k, weights=ge, minlength=cols.size).astype(np.int64)
        return count


def screened_counts(text: np.ndarray, audio: np.ndarray, idx: np.ndarray, *,
                    block_bytes: int, max_near_ties: int | None = None) -> Counts:
    """t2a and a2t counts of every (caption, positive clip) pair, screened in float32.

    Args:
        text: (n_captions, D) float64 L2-normalised caption embeddings (zero rows allowed).
        audio: (n_clips, D) float64 L2-normalised clip embeddings.
        idx: (n_captions,) int64 clip of each caption; every clip has a caption.
        block_bytes: memory budget of one block of float32 scores (and its masks).
        max_near_ties: most scores checked in float64 before giving up (default: one in a
            thousand of all scores, at least 65536).

    Returns:
        :class:`Counts`, equal to those of the float64 path.

    Raises:
        NearTieOverflow: when more than ``max_near_ties`` scores need the float64 check.
    """
    n_cap, n_clips = idx.size, audio.shape[0]
    if max_near_ties is None:
        max_near_ties = max(1 << 16, n_cap * n_clips // 1000)
    screen = _Screen(text, audio, idx, max_near_ties)
    text32, audio32_t = text.astype(np.float32), np.ascontiguousarray(audio.T, dtype=np.float32)
    slots = _slots(idx, n_clips)
    step = max(1, block_bytes // (n_clips * 10))  # float32 block, a gathered copy, two masks
    t2a, a2t = np.empty(n_cap, dtype=np.int64), np.zeros(n_cap, dtype=np.int64)
    for a in range(0, n_cap, step):
        block = text32[a:a + step] @ audio32_t  # (R, n_clips) float32
        t2a[a:a + step] = screen.rows(block, a)
        for slot in slots:
            a2t[slot.caps] += screen.cols(block, a, slot)
    return Counts(t2a, screen.score.astype(np.float64), a2t)
