"""Test-set leakage of reference captioners: a documented registry and a permutation test.

A captioner fine-tuned on the public MusicCaps training split may have seen the test clips
that belong to that split (``is_audioset_eval`` false), but not the others. A leaky model's
per-clip scores therefore spike on the possibly-seen clips. :func:`permutation_test`
compares the mean per-clip score of the two groups with a one-sided permutation test
(H1: seen > held-out), and :func:`decide_leakage` turns it into a verdict:

- ``inconclusive`` when either group has fewer than ``min_clips`` clips;
- ``leaky`` when ``p < alpha`` AND the seen mean exceeds the held-out mean by at least
  ``min_lift`` (relative), so that a negligible but "significant" shift is not flagged;
- ``clean`` otherwise.

A model listed in :data:`KNOWN_STATUS` takes its documented verdict; the empirical test is
still reported beside it. Clips with no ``is_audioset_eval`` flag belong to neither group.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

Verdict = Literal["leaky", "clean", "inconclusive"]


@dataclass(frozen=True)
class KnownStatus:
    """A documented leakage status and where it comes from."""

    verdict: Verdict
    source: str


# Documented status by reference name (the --name of `clapcap reference score`).
KNOWN_STATUS: dict[str, KnownStatus] = {
    "lp_music_caps": KnownStatus(
        "clean", "LP-MusicCaps pretrain checkpoint: trained on LP-MusicCaps-MSD pseudo-captions, "
                 "no MusicCaps audio (Doh et al., ISMIR 2023)"),
    "lp_music_caps_transfer": KnownStatus(
        "leaky", "LP-MusicCaps transfer checkpoint: fine-tuned on the MusicCaps training split "
                 "(Doh et al., ISMIR 2023)"),
}


@dataclass
class LeakageParams:
    """Settings of the empirical leakage check (``params.yaml`` ``reference.leakage``)."""

    metric: str = "cider_d"
    seen_flag: bool = False          # clips with is_audioset_eval == seen_flag are "possibly seen"
    alpha: float = 0.01
    min_lift: float = 0.25           # seen mean must exceed held-out mean by 25 % to be flagged
    min_clips: int = 10              # per group, below it the verdict is inconclusive
    n_permutations: int = 10000
    seed: int = 0


def permutation_test(seen: np.ndarray, held_out: np.ndarray, *, n_permutations: int = 10000,
                     seed: int = 0) -> float:
    """One-sided permutation p-value for mean(seen) - mean(held_out) > 0.

    Returns:
        ``(1 + #{permuted differences >= observed}) / (1 + n_permutations)``.

    Raises:
        ValueError: when a group is empty or ``n_permutations`` < 1.
    """
    seen, held_out = np.asarray(seen, dtype=float), np.asarray(held_out, dtype=float)
    if seen.size == 0 or held_out.size == 0:
        raise ValueError(f"permutation_test needs two non-empty groups, found {seen.size} and {held_out.size}")
    if n_permutations < 1:
        raise ValueError(f"n_permutations must be >= 1, found {n_permutations}")
    pooled = np.concatenate([seen, held_out])
    n_seen, total = seen.size, pooled.sum()
    observed = seen.mean() - held_out.mean()
    rng = np.random.default_rng(seed)
    # (P, N) random permutations; the first n_seen of each row form the permuted "seen" group.
    keys = rng.random((n_permutations, pooled.size))
    idx = np.argsort(keys, axis=1)[:, :n_seen]
    seen_sum = pooled[idx].sum(axis=1)
    diffs = seen_sum / n_seen - (total - seen_sum) / (pooled.size - n_seen)
    count = int(np.sum(diffs >= observed - 1e-12))
    return (1 + count) / (1 + n_permutations)


def _group_summary(scores: np.ndarray) -> dict[str, Any]:
    if scores.size == 0:
        return {"n_clips": 0, "mean": None, "median": None}
    return {"n_clips": int(scores.size), "mean": float(scores.mean()), "median": float(np.median(scores))}


def split_groups(per_clip: dict[str, float], flags: dict[str, bool | None],
                 seen_flag: bool) -> tuple[list[str], list[str]]:
    """Clip ids (seen, held_out) by ``is_audioset_eval``; unflagged clips are in neither."""
    seen = [c for c in per_clip if flags.get(c) is not None and flags[c] == seen_flag]
    held = [c for c in per_clip if flags.get(c) is not None and flags[c] != seen_flag]
    return seen, held


def decide_leakage(per_clip: dict[str, float], flags: dict[str, bool | None], *,
                   params: LeakageParams | None = None, name: str | None = None,
                   registry: dict[str, KnownStatus] | None = None) -> dict[str, Any]:
    """Leakage verdict for one model from its per-clip scores of ``params.metric``.

    Returns:
        ``{"verdict", "p_value", "metric", "seen": {...}, "held_out": {...}, "lift",
        "source", "empirical_verdict", ...}``; ``seen``/``held_out`` hold ``n_clips``,
        ``mean``, ``median`` and ``clip_ids``.
    """
    params = params or LeakageParams()
    registry = KNOWN_STATUS if registry is None else registry
    seen_ids, held_ids = split_groups(per_clip, flags, params.seen_flag)
    seen = np.array([per_clip[c] for c in seen_ids], dtype=float)
    held = np.array([per_clip[c] for c in held_ids], dtype=float)
    p_value, lift = None, None
    if seen.size and held.size:
        p_value = permutation_test(seen, held, n_permutations=params.n_permutations, seed=params.seed)
        base = held.mean()
        lift = float((seen.mean() - base) / base) if base > 0 else (math.inf if seen.mean() > 0 else 0.0)
    if min(seen.size, held.size) < params.min_clips:
        empirical: Verdict = "inconclusive"
    elif p_value < params.alpha and lift >= params.min_lift:
        empirical = "leaky"
    else:
        empirical = "clean"
    known = registry.get(name) if name else None
    return {
        "verdict": known.verdict if known else empirical,
        "source": f"registry: {known.source}" if known else "permutation test",
        "empirical_verdict": empirical,
        "p_value": p_value,
        "metric": params.metric,
        "lift": lift if lift is None or math.isfinite(lift) else "inf",
        "seen": {**_group_summary(seen), "is_audioset_eval": params.seen_flag, "clip_ids": seen_ids},
        "held_out": {**_group_summary(held), "is_audioset_eval": not params.seen_flag, "clip_ids": held_ids},
        "settings": {"alpha": params.alpha, "min_lift": params.min_lift, "min_clips": params.min_clips,
                     "n_permutations": params.n_permutations, "seed": params.seed},
    }
