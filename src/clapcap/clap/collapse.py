"""Is validation retrieval better than chance? A permutation test that works for any split size.

The statistic is the text-to-audio **mean reciprocal rank** (MRR) of the positives: every
caption ranks all clips of the split by cosine similarity and scores ``1 / rank`` of its
own clip (ties pessimistic: a clip scoring equal to the positive, within ``TIE_TOL``, ranks
before it). Under
the null hypothesis "the text embeddings say nothing about which clip they describe",
relabelling the clips by any permutation leaves the distribution unchanged. Captions of
one clip move together, so their dependence is respected.

The p-value is one-sided, the share of relabellings that score at least the observed MRR:
exact over all ``n!`` permutations when ``n! <= n_permutations + 1``, else Monte Carlo with
``n_permutations`` seeded permutations, ``p = (1 + #{MRR_perm >= MRR_obs}) / (1 + n_permutations)``.
A collapsed model (constant embeddings) gives p = 1. The smallest attainable p is
``1 / n!`` (exact) or ``1 / (1 + n_permutations)``; when it is not below ``alpha`` (4 clips
or fewer at alpha 0.01) no test can show learning, and the check is marked untestable.

A failed test is named by what was measured (:meth:`ChanceTest.verdict`): "collapsed" only
when the observed MRR is at or below chance; above chance but not significant, the model is
"not distinguishable from chance on N clips", which on a small split says more about the
split than about the training.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

TIE_TOL = 1e-6  # cosine similarities closer than this tie (float32 embeddings carry ~1e-7)


@dataclass(frozen=True)
class ChanceTest:
    """Outcome of :func:`chance_test`."""

    statistic: str  # "t2a_mrr"
    observed: float  # MRR of the true clip labels
    chance: float  # expected MRR under the null, H_n / n
    p_value: float
    alpha: float
    n_clips: int
    n_captions: int
    n_permutations: int  # permutations scored (n! when exact)
    exact: bool
    testable: bool  # False when no outcome could reach p < alpha

    @property
    def significant(self) -> bool:
        """True when the observed MRR beats chance at level ``alpha``."""
        return self.testable and self.p_value < self.alpha

    @property
    def above_chance(self) -> bool:
        """True when the observed MRR is above the chance level (significant or not)."""
        return self.observed > self.chance + 1e-9

    @property
    def min_p_value(self) -> float:
        """The smallest p-value this many clips and permutations can give."""
        return 1 / self.n_permutations if self.exact else 1 / (1 + self.n_permutations)

    def verdict(self) -> str:
        """What a test that is not significant found: ``collapsed`` (at or below chance), or
        ``not distinguishable from chance on N clips`` (above it, but not significantly)."""
        return f"not distinguishable from chance on {self.n_clips} clips" if self.above_chance else "collapsed"

    def describe(self) -> str:
        """One line: statistic, chance level, p-value and level."""
        kind = "exact" if self.exact else f"{self.n_permutations} permutations"
        return (f"t2a MRR {self.observed:.3f} vs chance {self.chance:.3f} over {self.n_clips} clips / "
                f"{self.n_captions} captions (one-sided permutation p = {self.p_value:.3g}, {kind}; "
                f"alpha {self.alpha:g})")


def reciprocal_rank_matrix(audio: np.ndarray, text: np.ndarray, clip_index: np.ndarray) -> np.ndarray:
    """``M[i, j]`` = sum over the captions of clip ``i`` of ``1 / rank of clip j`` (ties pessimistic).

    Returns:
        An (n_clips, n_clips) float64 array; ``trace(M) / n_captions`` is the MRR.
    """
    a = np.asarray(audio, dtype=np.float64)
    t = np.asarray(text, dtype=np.float64)
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    t = t / np.maximum(np.linalg.norm(t, axis=1, keepdims=True), 1e-12)
    sim = t @ a.T  # (n_captions, n_clips)
    # rank of clip j for caption c = #clips scoring >= sim[c, j] - TIE_TOL (pessimistic ties; the
    # tolerance makes near-constant embeddings, whose cosines differ only by rounding, all tie)
    ordered = np.sort(sim, axis=1)
    rank = np.stack([sim.shape[1] - np.searchsorted(row, s - TIE_TOL, side="left")
                     for row, s in zip(ordered, sim, strict=True)])
    m = np.zeros((a.shape[0], a.shape[0]))
    np.add.at(m, np.asarray(clip_index, dtype=np.int64), 1.0 / rank)
    return m


def chance_test(audio: np.ndarray, text: np.ndarray, clip_index: np.ndarray, *, alpha: float = 0.01,
                n_permutations: int = 999, seed: int = 0) -> ChanceTest:
    """One-sided permutation test of the t2a MRR against chance (see the module docstring).

    Args:
        audio: (n_clips, D) clip embeddings.
        text: (n_captions, D) caption embeddings.
        clip_index: (n_captions,) row of ``audio`` each caption describes.

    Returns:
        A :class:`ChanceTest` (deterministic for a given ``seed``).

    Raises:
        ValueError: on fewer than 2 clips or mismatched shapes.
    """
    n, idx = int(np.shape(audio)[0]), np.asarray(clip_index, dtype=np.int64)
    if n < 2 or np.shape(text)[0] != idx.shape[0]:
        raise ValueError(f"chance_test needs >= 2 clips and one clip index per caption; found {n} clips, "
                         f"{np.shape(text)[0]} captions, {idx.shape[0]} indices")
    m = reciprocal_rank_matrix(audio, text, idx)
    observed = float(np.trace(m))
    exact = math.factorial(n) <= n_permutations + 1
    if exact:
        perms = np.array(list(itertools.permutations(range(n))))
    else:
        rng = np.random.default_rng(seed)
        perms = np.stack([rng.permutation(n) for _ in range(n_permutations)])
    scores = m[np.arange(n), perms].sum(axis=1)  # (n_perms,)
    at_least = int((scores >= observed - 1e-9 * max(1.0, abs(observed))).sum())
    p = at_least / len(perms) if exact else (1 + at_least) / (1 + len(perms))
    min_p = 1 / len(perms) if exact else 1 / (1 + len(perms))
    return ChanceTest(statistic="t2a_mrr", observed=observed / len(idx),
                      chance=sum(1 / k for k in range(1, n + 1)) / n, p_value=float(p), alpha=alpha,
                      n_clips=n, n_captions=int(len(idx)), n_permutations=int(len(perms)), exact=exact,
                      testable=min_p < alpha)


def split_size_advice(test: ChanceTest, split: str) -> str:
    """The advice for a model above chance whose test is not significant: a larger split."""
    return (f"The model ranks the true clips above chance, but {test.n_clips} clips are too few to tell "
            f"that from luck at alpha {test.alpha:g} (the smallest p-value they allow is "
            f"{test.min_p_value:.3g}): validate on a larger {split} split, or relax collapse_alpha.")


def collapse_advice(history: list[dict[str, float]], lr: float, split: str, *,
                    chance_loss: float | None = None) -> str:
    """What to try after a collapse, judged from the training loss of ``history``.

    ``chance_loss`` is the loss of embeddings that carry no information (for the symmetric
    contrastive loss, the mean over batches of ln(batch size)); None when unknown.

    Returns:
        One or two sentences: a non-finite loss, or a loss stuck at the chance level, points
        at the learning rate; a loss still falling at that level asks for more epochs; a loss
        below chance while validation stays at chance points at the data or at overfitting.
    """
    losses = [float(h["loss"]) for h in history]
    if not losses:
        return "No epoch was trained: raise epochs."
    if not all(math.isfinite(v) for v in losses):
        return f"The training loss became non-finite: lower the learning rate (lr {lr:g}) or raise warmup_steps."
    first, last = losses[0], losses[-1]
    falling = len(losses) >= 2 and last < 0.99 * losses[-2]
    trend = f"training loss {first:.3f} -> {last:.3f} over {len(losses)} epoch(s)"
    at_chance = chance_loss is not None and last >= 0.99 * chance_loss
    if at_chance and falling:
        return (f"The {trend} is still falling but has not gone below chance ({chance_loss:.3f}): train more "
                f"epochs; if the loss then stays at that level, lower the learning rate (lr {lr:g}).")
    if at_chance or (chance_loss is None and last >= 0.98 * first):
        level = f", the chance level of the contrastive loss ({chance_loss:.3f})" if at_chance else ""
        return (f"The {trend} is stuck{level}: lower the learning rate (lr {lr:g}) or raise warmup_steps "
                f"(a loss stuck at chance is the known collapse at too high a rate).")
    source = "" if split == "train" else " and come from the same source as the train captions"
    return (f"The {trend} fell below chance but {split} retrieval did not: check that the {split} captions "
            f"describe their clips{source}; with a small train split, add data or train fewer epochs "
            f"(overfitting).")
