"""Deterministic train/val/test splits with a fixed split seed.

Clips are shuffled with ``numpy.random.default_rng(split_seed)`` after sorting by
``clip_id``, then cut by the configured fractions (rounded down; the remainder goes to
``train``). The split seed is 42 everywhere, so every model evaluates on one test set;
training seeds never touch it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

SPLIT_SEED = 42


def assign_splits(clip_ids: list[str], fractions: dict[str, float], seed: int = SPLIT_SEED) -> dict[str, str]:
    """Map each clip id to a split name.

    Raises:
        ValueError: when fractions are negative, do not sum to 1, or ids repeat.
    """
    if any(f < 0 for f in fractions.values()) or abs(sum(fractions.values()) - 1.0) > 1e-9:
        raise ValueError(f"split fractions must be >= 0 and sum to 1, found {fractions}")
    if len(set(clip_ids)) != len(clip_ids):
        raise ValueError("clip ids must be unique to assign splits")
    ordered = sorted(clip_ids)
    perm = np.random.default_rng(seed).permutation(len(ordered))
    n = len(ordered)
    counts = {name: int(np.floor(frac * n)) for name, frac in fractions.items() if name != "train"}
    out: dict[str, str] = {}
    pos = 0
    for name, count in counts.items():
        for idx in perm[pos:pos + count]:
            out[ordered[idx]] = name
        pos += count
    for idx in perm[pos:]:
        out[ordered[idx]] = "train"
    return out


def apply_splits(df: pd.DataFrame, fractions: dict[str, float], seed: int = SPLIT_SEED) -> pd.DataFrame:
    """Return a copy of ``df`` with its ``split`` column set by :func:`assign_splits`."""
    mapping = assign_splits(list(df["clip_id"]), fractions, seed)
    out = df.copy()
    out["split"] = out["clip_id"].map(mapping)
    return out


def split_by_flag(df: pd.DataFrame, column: str, fractions: dict[str, float],
                  seed: int = SPLIT_SEED) -> pd.DataFrame:
    """Return a copy of ``df`` whose clips with ``column`` true are ``test`` and the rest
    ``train``/``val`` by :func:`assign_splits`, in the ratio of ``fractions``' train and val.

    MusicCaps' ``is_audioset_eval`` marks the clips of AudioSet's evaluation segments, the test
    set MusicCaps captioning papers report on.

    Raises:
        ValueError: when a clip's flag is missing, or no clip is flagged or every clip is.
    """
    flags = df[column]
    if flags.isna().any():
        missing = df.loc[flags.isna(), "clip_id"].tolist()[:5]
        raise ValueError(f"{column} is empty for clip(s) {missing}: cannot split by it")
    test = flags.astype(bool)
    if test.all() or not test.any():
        raise ValueError(f"{column} is {'true' if test.all() else 'false'} for every clip: no "
                         f"{'train' if test.all() else 'test'} split")
    train, val = fractions.get("train", 0.0), fractions.get("val", 0.0)
    rest = assign_splits(list(df.loc[~test, "clip_id"]), {"train": train / (train + val), "val": val / (train + val)},
                         seed)
    out = df.copy()
    out["split"] = [("test" if t else rest[c]) for c, t in zip(out["clip_id"], test, strict=True)]
    return out
