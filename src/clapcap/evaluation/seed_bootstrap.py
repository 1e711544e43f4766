"""Comparisons that carry training variance: a two-level bootstrap over seeds and test items.

A stated finding compares system A with system B on one per-item metric whose corpus value
is the mean over items (a retrieval query's R@10 or AP, a caption's CIDEr-D). Each system
was trained with one or more seeds and every seed was scored on the same test items, so
items are paired across all runs.

A bootstrap over test items alone measures how sure we are about *these* trained weights.
Another training run (another seed, or the same seed on another CPU, whose float rounding
differs from the first epochs) lands elsewhere, and a claim about a method must survive
that. Each resample of :func:`compare_over_seeds` therefore

1. draws the test items with replacement, the same draw for every run of both systems
   (items stay paired);
2. draws each system's seeds with replacement (n_A of A's seeds, n_B of B's), or one
   shared draw of seed positions when ``paired_seeds`` (row i of A and row i of B share a
   training seed, for example two configurations trained from the same seed);
3. takes effect* = mean over the drawn A seeds of their item means, minus the same for B.

The interval is the percentile interval of effect* (the hierarchical bootstrap of Davison &
Hinkley 1997, sec. 3.8, resampling both levels). With few seeds the seed level is coarse and
slightly narrow (a resample of n values has variance (n-1)/n of the seeds' own), so a
"holds" verdict (:func:`verdict`) also needs every single seed's effect on the claimed side:
a finding that rests on one lucky seed cannot hold.

A side with a single seed has no seed spread to resample. It must bring an explicit noise
floor sigma (the std over training seeds of the same metric for that model family, measured
in a seed study); each resample then adds N(0, sigma^2) to that side. Without one the
comparison refuses: one seed says nothing about another training run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

Claim = Literal["greater", "less", "not_less", "not_greater"]
Verdict = Literal["holds", "within noise", "reversed"]
CLAIMS: tuple[str, ...] = ("greater", "less", "not_less", "not_greater")
VERDICTS: tuple[str, ...] = ("holds", "within noise", "reversed")
_CHUNK_ELEMENTS = 4_000_000


@dataclass(frozen=True)
class SeedScores:
    """Per-item scores of one system.

    Attributes:
        values: (n_seeds, n_items) float array; row i holds the per-item metric of the model
            trained with ``seeds[i]``, columns are the shared test items.
        seeds: the training seed of each row.
        noise_floor: std over training seeds of the corpus metric, required when there is a
            single seed (see the module docstring).
    """

    values: np.ndarray
    seeds: tuple[int, ...]
    noise_floor: float | None = None

    def __post_init__(self) -> None:
        values = np.asarray(self.values, dtype=np.float64)
        if values.ndim != 2 or values.shape[0] == 0 or values.shape[1] == 0:
            raise ValueError(f"values: expected a non-empty (n_seeds, n_items) array, found shape "
                             f"{values.shape}")
        if len(self.seeds) != values.shape[0]:
            raise ValueError(f"seeds: expected {values.shape[0]} seeds (one per row), found "
                             f"{len(self.seeds)}")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds: expected distinct training seeds, found {list(self.seeds)}")
        if not np.isfinite(values).all():
            raise ValueError("values: expected finite scores, found NaN or inf")
        if self.noise_floor is not None and not (np.isfinite(self.noise_floor) and self.noise_floor >= 0):
            raise ValueError(f"noise_floor: expected a finite value >= 0, found {self.noise_floor!r}")
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))

    @property
    def n_seeds(self) -> int:
        return self.values.shape[0]

    @property
    def seed_means(self) -> np.ndarray:
        """(n_seeds,) corpus metric of each seed."""
        return self.values.mean(axis=1)


@dataclass(frozen=True)
class SeedComparison:
    """The effect mean(A) - mean(B) with its interval over seeds and items."""

    effect: float
    low: float
    high: float
    a: float
    b: float
    per_seed_effects: dict[int, float]
    n_seeds_a: int
    n_seeds_b: int
    n_items: int
    confidence: float
    n_resamples: int
    paired_seeds: bool
    noise_floors: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """A JSON-ready dict (strict JSON: every value is finite)."""
        return {"effect": self.effect, "ci": {"low": self.low, "high": self.high},
                "a": self.a, "b": self.b, "confidence": self.confidence,
                "n_seeds": {"a": self.n_seeds_a, "b": self.n_seeds_b}, "n_items": self.n_items,
                "per_seed_effects": {str(k): v for k, v in self.per_seed_effects.items()},
                "n_resamples": self.n_resamples, "paired_seeds": self.paired_seeds,
                "noise_floors": dict(self.noise_floors)}


def _check_pair(a: SeedScores, b: SeedScores, paired_seeds: bool) -> None:
    if a.values.shape[1] != b.values.shape[1]:
        raise ValueError(f"A has {a.values.shape[1]} items but B has {b.values.shape[1]}: the "
                         "comparison needs the same test items in the same order")
    if paired_seeds and a.seeds != b.seeds:
        raise ValueError(f"paired_seeds needs the same seeds in the same order, found {list(a.seeds)} "
                         f"and {list(b.seeds)}")
    for name, side in (("A", a), ("B", b)):
        if side.n_seeds < 2 and side.noise_floor is None:
            raise ValueError(f"{name} has a single training seed ({side.seeds[0]}) and no noise floor: "
                             "one seed says nothing about another training run; add seeds or "
                             "pass the family's measured noise_floor")


def _side_draw(side: SeedScores, item_means: np.ndarray, seed_pick: np.ndarray,
               rng: np.random.Generator) -> np.ndarray:
    """(chunk,) resampled corpus value of one side: mean over drawn seeds (+ noise floor)."""
    picked = np.take_along_axis(item_means, seed_pick, axis=1).mean(axis=1)
    if side.n_seeds == 1 and side.noise_floor:
        picked = picked + rng.normal(0.0, side.noise_floor, size=picked.shape)
    return picked


def compare_over_seeds(a: SeedScores, b: SeedScores, *, paired_seeds: bool = False,
                       n_resamples: int = 2000, confidence: float = 0.95,
                       rng_seed: int = 0) -> SeedComparison:
    """Two-level bootstrap of mean(A) - mean(B) over training seeds and test items.

    Returns:
        The effect on all items and seeds, its percentile interval and each A seed's effect
        (against the same B seed when ``paired_seeds``, else against B's mean over seeds).

    Raises:
        ValueError: on different item counts, unpaired seeds with ``paired_seeds``, a single
            seed without a noise floor, or a bad ``n_resamples``/``confidence``.
    """
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        raise ValueError(f"n_resamples: expected a positive int, found {n_resamples!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence: expected a value in (0, 1), found {confidence!r}")
    _check_pair(a, b, paired_seeds)
    rng = np.random.default_rng(rng_seed)
    n_items = a.values.shape[1]
    chunk = max(1, _CHUNK_ELEMENTS // n_items)
    effects = []
    for start in range(0, n_resamples, chunk):
        c = min(chunk, n_resamples - start)
        draws = rng.integers(0, n_items, size=(c, n_items)) + (np.arange(c) * n_items)[:, None]
        counts = np.bincount(draws.ravel(), minlength=c * n_items).reshape(c, n_items)
        means_a = counts @ a.values.T / n_items  # (c, n_seeds_a)
        means_b = counts @ b.values.T / n_items  # (c, n_seeds_b)
        pick_a = rng.integers(0, a.n_seeds, size=(c, a.n_seeds))
        pick_b = pick_a if paired_seeds else rng.integers(0, b.n_seeds, size=(c, b.n_seeds))
        effects.append(_side_draw(a, means_a, pick_a, rng) - _side_draw(b, means_b, pick_b, rng))
    effect_star = np.concatenate(effects)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(effect_star, [alpha, 1 - alpha])
    ma, mb = a.seed_means, b.seed_means
    if paired_seeds:
        per_seed = {s: float(ma[i] - mb[i]) for i, s in enumerate(a.seeds)}
    else:
        per_seed = {s: float(ma[i] - mb.mean()) for i, s in enumerate(a.seeds)}
    floors = {name: float(side.noise_floor) for name, side in (("a", a), ("b", b))
              if side.n_seeds == 1 and side.noise_floor is not None}
    return SeedComparison(effect=float(ma.mean() - mb.mean()), low=float(low), high=float(high),
                          a=float(ma.mean()), b=float(mb.mean()), per_seed_effects=per_seed,
                          n_seeds_a=a.n_seeds, n_seeds_b=b.n_seeds, n_items=n_items,
                          confidence=confidence, n_resamples=n_resamples,
                          paired_seeds=paired_seeds, noise_floors=floors)


def verdict(cmp: SeedComparison, claim: Claim, *, margin: float = 0.0) -> Verdict:
    """Whether the comparison supports a claim about A against B.

    Claims (``d`` = mean(A) - mean(B), ``[lo, hi]`` its interval, ``m`` = ``margin`` >= 0):

    - ``greater``: holds when lo > m and every per-seed effect > m; reversed when hi < 0.
    - ``less``: holds when hi < -m and every per-seed effect < -m; reversed when lo > 0.
    - ``not_less`` (A loses at most m; "no loss" claims): holds when lo > -m and every
      per-seed effect > -m; reversed when hi < -m (A is surely worse by more than m).
    - ``not_greater``: the mirror image, holds when hi < m and every per-seed effect < m;
      reversed when lo > m.

    Anything else is ``within noise``. A "no loss" claim needs a margin > 0: with m = 0 it
    could only hold where A is significantly better.

    Raises:
        ValueError: on an unknown claim or a negative margin.
    """
    if claim not in CLAIMS:
        raise ValueError(f"claim: expected one of {CLAIMS}, found {claim!r}")
    if not margin >= 0:
        raise ValueError(f"margin: expected a value >= 0, found {margin!r}")
    seeds = list(cmp.per_seed_effects.values())
    if claim == "greater":
        if cmp.low > margin and all(e > margin for e in seeds):
            return "holds"
        return "reversed" if cmp.high < 0 else "within noise"
    if claim == "less":
        if cmp.high < -margin and all(e < -margin for e in seeds):
            return "holds"
        return "reversed" if cmp.low > 0 else "within noise"
    if claim == "not_less":
        if cmp.low > -margin and all(e > -margin for e in seeds):
            return "holds"
        return "reversed" if cmp.high < -margin else "within noise"
    if cmp.high < margin and all(e < margin for e in seeds):
        return "holds"
    return "reversed" if cmp.low > margin else "within noise"
