"""Agreement analysis of the pairwise study: win rates, Fleiss and Cohen kappa.

Definitions (see docs/pairwise.md):

- **Win rate** of a system in a pool: ``(wins + ties / 2) / votes`` over every vote on an
  item that includes the system. The interval is the Wilson score interval at
  ``confidence`` with ``votes`` trials. Votes on one item are not independent, so the
  interval is optimistic when each item has many raters; ``n_items`` is reported beside it.
- **Fleiss kappa** within a pool: categories ``A``, ``B``, ``tie``; items rated by fewer
  than two raters of the pool are dropped. Items may have different rater counts
  (per-item agreement uses the item's own count; Fleiss 1971 with the usual
  generalisation), which equals statsmodels' ``fleiss_kappa`` when every item has the
  same count.
- **Consensus** of a pool on an item: the choice with strictly more votes than any other.
  An item whose top count is shared (for example one ``A`` and one ``B``) has no
  consensus and is left out of every consensus comparison; the count is reported.
- **Cohen kappa** between two raters (or a consensus and a rater) on the items both
  rated, over the labels either used; equal to scikit-learn's ``cohen_kappa_score``.
  Undefined (``None``) when fewer than two common items or when chance agreement is 1.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clapcap.pairwise.intervals import wilson_interval
from clapcap.pairwise.orders import combine_orders
from clapcap.pairwise.ratings import CHOICES, read_ratings
from clapcap.utils.io import write_json

logger = logging.getLogger(__name__)


def fleiss_kappa(table: np.ndarray) -> float | None:
    """Fleiss' kappa of an items x categories count table.

    Returns:
        The kappa, or None when it is undefined (no item with two or more ratings, or
        every rating in one category).

    Raises:
        ValueError: when ``table`` is not a 2-D array of non-negative counts.
    """
    table = np.asarray(table, dtype=np.float64)
    if table.ndim != 2 or (table < 0).any():
        raise ValueError(f"expected a 2-D table of non-negative counts, found shape {table.shape}")
    n_i = table.sum(axis=1)
    table = table[n_i >= 2]
    n_i = n_i[n_i >= 2]
    if table.shape[0] == 0:
        return None
    p_j = table.sum(axis=0) / table.sum()
    p_i = ((table * table).sum(axis=1) - n_i) / (n_i * (n_i - 1.0))
    p_e = float((p_j * p_j).sum())
    if math.isclose(p_e, 1.0):
        return None
    return float((p_i.mean() - p_e) / (1.0 - p_e))


def cohen_kappa(y1: Sequence[str], y2: Sequence[str]) -> float | None:
    """Cohen's kappa of two label sequences of equal length.

    Returns:
        The kappa, or None when fewer than two items or when chance agreement is 1.

    Raises:
        ValueError: when the lengths differ.
    """
    if len(y1) != len(y2):
        raise ValueError(f"label sequences differ in length: {len(y1)} vs {len(y2)}")
    if len(y1) < 2:
        return None
    labels = sorted(set(y1) | set(y2))
    index = {lab: i for i, lab in enumerate(labels)}
    conf = np.zeros((len(labels), len(labels)))
    for a, b in zip(y1, y2, strict=True):
        conf[index[a], index[b]] += 1
    n = conf.sum()
    p_o = np.trace(conf) / n
    p_e = float((conf.sum(axis=0) * conf.sum(axis=1)).sum() / (n * n))
    if math.isclose(p_e, 1.0):
        return None
    return float((p_o - p_e) / (1.0 - p_e))


def _system_outcomes(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (vote, system in the pair): outcome win/loss/tie for that system."""
    rows = []
    for rec in df[["item_id", "pool", "system_a", "system_b", "choice"]].itertuples(index=False):
        for own, other, side in ((rec.system_a, rec.system_b, "A"), (rec.system_b, rec.system_a, "B")):
            outcome = "tie" if rec.choice == "tie" else ("win" if rec.choice == side else "loss")
            rows.append((rec.pool, rec.item_id, own, other, outcome))
    return pd.DataFrame(rows, columns=["pool", "item_id", "system", "opponent", "outcome"])


def _rate(group: pd.DataFrame, confidence: float) -> dict[str, Any]:
    wins = int((group["outcome"] == "win").sum())
    ties = int((group["outcome"] == "tie").sum())
    n = len(group)
    score = wins + 0.5 * ties
    low, high = wilson_interval(score, n, confidence)
    return {"win_rate": score / n, "ci_low": low, "ci_high": high, "wins": wins,
            "losses": n - wins - ties, "ties": ties, "votes": n,
            "n_items": int(group["item_id"].nunique())}


def win_rates(df: pd.DataFrame, confidence: float = 0.95) -> dict[str, Any]:
    """Per pool: per-system win rates and head-to-head rates (see module docstring).

    Returns:
        ``{pool: {"systems": {system: stats}, "head_to_head": {"X vs Y": stats}}}``.
    """
    outcomes = _system_outcomes(df)
    out: dict[str, Any] = {}
    for pool, pool_df in outcomes.groupby("pool", sort=True):
        systems = {str(s): _rate(g, confidence) for s, g in pool_df.groupby("system", sort=True)}
        h2h = {f"{s} vs {o}": _rate(g, confidence)
               for (s, o), g in pool_df.groupby(["system", "opponent"], sort=True)}
        out[str(pool)] = {"systems": systems, "head_to_head": h2h}
    return out


def count_table(df: pd.DataFrame) -> pd.DataFrame:
    """Items x choices vote counts (columns ``A``, ``B``, ``tie``) of a ratings table."""
    table = pd.crosstab(df["item_id"], df["choice"])
    return table.reindex(columns=list(CHOICES), fill_value=0)


def consensus(df: pd.DataFrame) -> pd.Series:
    """Majority choice per item (strict majority over the other choices; shared tops dropped).

    Returns:
        A Series indexed by item_id with the consensus choice.
    """
    table = count_table(df)
    values = table.to_numpy()
    top = values.max(axis=1, keepdims=True)
    unique_top = (values == top).sum(axis=1) == 1
    labels = np.asarray(table.columns)[values.argmax(axis=1)]
    return pd.Series(labels[unique_top], index=table.index[unique_top], name="consensus")


def _kappa_between(a: pd.Series, b: pd.Series) -> dict[str, Any]:
    common = a.index.intersection(b.index)
    kappa = cohen_kappa(list(a.loc[common]), list(b.loc[common]))
    agree = float((a.loc[common] == b.loc[common]).mean()) if len(common) else None
    return {"kappa": kappa, "n_items": int(len(common)), "raw_agreement": agree}


def _rater_labels(df: pd.DataFrame) -> dict[str, pd.Series]:
    return {str(r): g.set_index("item_id")["choice"] for r, g in df.groupby("rater", sort=True)}


def kappas(df: pd.DataFrame, human_pool: str = "human") -> dict[str, Any]:
    """Fleiss kappa per pool and Cohen kappas against the human consensus and between judges.

    Judges are the raters of every pool other than ``human_pool``.

    Returns:
        ``{"fleiss": {pool: {...}}, "consensus": {...}, "human_vs_judge": {...},
        "human_vs_pool_consensus": {...}, "judge_vs_judge": {...}}``.
    """
    fleiss = {}
    for pool, g in df.groupby("pool", sort=True):
        table = count_table(g)
        rated = table[table.sum(axis=1) >= 2]
        fleiss[str(pool)] = {"kappa": fleiss_kappa(rated.to_numpy()), "n_items": int(len(rated)),
                             "n_raters": int(g["rater"].nunique())}
    pools = {str(p): g for p, g in df.groupby("pool", sort=True)}
    consensuses = {p: consensus(g) for p, g in pools.items()}
    info = {p: {"n_items": int(pools[p]["item_id"].nunique()), "n_with_consensus": int(len(c))}
            for p, c in consensuses.items()}
    judges = _rater_labels(df[df["pool"] != human_pool])
    out: dict[str, Any] = {"fleiss": fleiss, "consensus": info, "human_pool": human_pool,
                           "human_vs_judge": {}, "human_vs_pool_consensus": {}, "judge_vs_judge": {}}
    if human_pool in consensuses:
        human = consensuses[human_pool]
        out["human_vs_judge"] = {j: _kappa_between(human, lab) for j, lab in judges.items()}
        out["human_vs_pool_consensus"] = {
            p: _kappa_between(human, c) for p, c in consensuses.items() if p != human_pool}
    else:
        logger.warning("no rows of the human pool %r: consensus kappas skipped", human_pool)
    out["judge_vs_judge"] = {f"{a} vs {b}": _kappa_between(judges[a], judges[b])
                             for a, b in itertools.combinations(sorted(judges), 2)}
    return out


def compute_agreement(df: pd.DataFrame, *, human_pool: str = "human",
                      confidence: float = 0.95) -> dict[str, Any]:
    """Win rates and kappas of a validated ratings table.

    Returns:
        A JSON-ready dict with ``n_votes``, ``pools``, ``win_rates`` and ``agreement``.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), found {confidence}")
    return {
        "n_votes": int(len(df)),
        "n_items": int(df["item_id"].nunique()),
        "pools": {str(p): int(n) for p, n in df.groupby("pool").size().items()},
        "confidence": confidence,
        "ci_method": "wilson",
        "win_rates": win_rates(df, confidence),
        "agreement": kappas(df, human_pool),
    }


def run_agreement(ratings: str | Path, out: str | Path, *, human_pool: str = "human",
                  confidence: float = 0.95) -> dict[str, Any]:
    """Read ``ratings`` (CSV), compute the agreement report and write it to ``out`` (JSON).

    A judge's two order votes (raters ``<model>#AB`` and ``<model>#BA``) count as one
    judgement (:func:`clapcap.pairwise.orders.combine_orders`).

    Returns:
        The report dict.

    Raises:
        FileNotFoundError: when the ratings file is missing.
        RatingsError: when it is malformed.
    """
    df, incomplete = combine_orders(read_ratings(ratings))
    report = {"ratings": str(ratings), "incomplete_judgements": incomplete,
              **compute_agreement(df, human_pool=human_pool, confidence=confidence)}
    write_json(out, report)
    logger.info("wrote agreement report to %s", out)
    return report


def bootstrap_preferences(df: pd.DataFrame, *, n_resamples: int = 1000, confidence: float = 0.95,
                          seed: int = 0, judges_only: bool = True, human_pool: str = "human") -> dict[str, Any]:
    """Each system's preference rate with a percentile bootstrap interval over clips.

    The rate is the win rate above (``(wins + ties / 2) / votes``); per pool, and under
    ``"all judges"`` over every judge pool together (the human pool left out when
    ``judges_only``). The bootstrap resamples clips with replacement (``n_resamples`` times,
    seeded): every vote on a drawn clip, of every rater and pair, comes with it, so the
    interval accounts for raters agreeing on a clip (which the Wilson interval does not).

    Returns:
        ``{pool: {system: {"rate", "ci_low", "ci_high", "votes", "n_clips"}}}``.
    """
    if not 0.0 < confidence < 1.0 or n_resamples < 1:
        raise ValueError(f"confidence must be in (0, 1) and n_resamples >= 1, found {confidence}, {n_resamples}")
    outcomes = _system_outcomes(df)
    outcomes["clip"] = outcomes["item_id"].str.split("::").str[0]
    outcomes["score"] = outcomes["outcome"].map({"win": 1.0, "tie": 0.5, "loss": 0.0})
    groups = {str(p): g for p, g in outcomes.groupby("pool", sort=True)}
    judges = outcomes[outcomes["pool"] != human_pool] if judges_only else outcomes
    if not judges.empty:
        groups["all judges"] = judges
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    for name, g in groups.items():
        clips = sorted(g["clip"].unique())
        draws = rng.multinomial(len(clips), np.full(len(clips), 1.0 / len(clips)), size=n_resamples)
        per_system = {}
        for system, s in g.groupby("system", sort=True):
            by_clip = s.groupby("clip")["score"].agg(["sum", "count"]).reindex(clips, fill_value=0)
            scores, counts = by_clip["sum"].to_numpy(float), by_clip["count"].to_numpy(float)
            denom = draws @ counts
            rates = np.divide(draws @ scores, denom, out=np.full(n_resamples, np.nan), where=denom > 0)
            low, high = np.nanquantile(rates, [(1 - confidence) / 2, (1 + confidence) / 2])
            per_system[str(system)] = {"rate": float(scores.sum() / counts.sum()), "ci_low": float(low),
                                       "ci_high": float(high), "votes": int(counts.sum()),
                                       "n_clips": int((counts > 0).sum())}
        out[name] = per_system
    return out
