"""The pairwise study end to end (DVC stage ``pairwise_study``, params.yaml ``pairwise``).

1. **Items**: every pair of the captioners in ``systems`` (``{name: predictions JSON}``), plus
   the first reference caption as system ``reference``, on ``n_clips`` clips of the reference
   split (seeded), written to ``<out_dir>/pairs.csv`` (:mod:`clapcap.pairwise.pairs`).
2. **LLM judges**: the served model (``engine``, started for the step and stopped by PID,
   :mod:`clapcap.llm.engine`) judges every item once per rater of each pool in ``judges``
   (:mod:`clapcap.pairwise.llm_judge`: each rater sees the two captions in its own seeded
   order, and a pool sets the temperature). Votes go to the SQLite store ``votes_db``, which
   persists: a rerun asks only what is missing.
3. **Human votes**: every ``*.sqlite`` store in ``human_dir`` (the rating page,
   ``clapcap pairwise serve --pairs <out_dir>/pairs.csv --db <human_dir>/votes.sqlite``)
   joins the judges' votes as pool ``human``; ``human_dir`` is a dependency of the stage, so
   the next ``dvc repro`` includes new votes.
4. **Analysis** (``<out_dir>/agreement.json``, :mod:`clapcap.pairwise.agreement`): Fleiss
   kappa within each pool, Cohen kappa for every pair of judges and against the human
   consensus when there are human votes, each system's win rate (Wilson interval) and its
   preference rate with a bootstrap interval over clips, and each pool's position bias (the
   share of votes for the caption shown first); ``<out_dir>/summary.json`` holds
   the headline numbers (a DVC metrics file) and ``<out_dir>/preference.png`` the plot.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from clapcap.llm.engine import EngineConfig, served
from clapcap.pairwise.agreement import bootstrap_preferences, compute_agreement
from clapcap.pairwise.llm_judge import JudgeConfig, run_judges
from clapcap.pairwise.pairs import build_pairs_file
from clapcap.pairwise.ratings import validate_ratings
from clapcap.pairwise.store import VoteStore
from clapcap.utils.io import write_json

logger = logging.getLogger(__name__)

HUMAN_POOL = "human"


@dataclass
class PairwiseStudyParams:
    """Section ``pairwise`` (module docstring). ``judges``: one :class:`JudgeConfig` per pool
    (``base_url`` is the engine's when ``engine.kind`` is not ``none``)."""

    systems: dict[str, str] = field(default_factory=dict)
    reference_split: str = "outputs/reference_split/split.csv"
    include_reference: bool = True
    n_clips: int = 12
    seed: int = 0
    out_dir: str = "results/pairwise"
    votes_db: str = "results/pairwise_votes/judges.sqlite"
    human_dir: str = "pairwise/human"
    engine: EngineConfig = field(default_factory=EngineConfig)
    judges: list[JudgeConfig] = field(default_factory=list)
    n_resamples: int = 1000
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if len(self.systems) + int(self.include_reference) < 2:
            raise ValueError(f"pairwise.systems: need two systems to compare, found {sorted(self.systems)}")
        if not self.judges:
            raise ValueError("pairwise.judges: name at least one judge pool")
        pools = [j.pool for j in self.judges]
        if len(set(pools)) != len(pools) or HUMAN_POOL in pools:
            raise ValueError(f"pairwise.judges: pool names must be unique and not {HUMAN_POOL!r}, found {pools}")


def _human_votes(human_dir: Path) -> pd.DataFrame:
    frames = [VoteStore(p).votes() for p in sorted(human_dir.glob("*.sqlite"))] if human_dir.is_dir() else []
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if not df.empty:
        df["pool"] = HUMAN_POOL
    return df


def run_pairwise_study(params: PairwiseStudyParams) -> dict[str, Any]:
    """Items, judges' votes, human votes and the analysis (module docstring). Returns the summary.

    Raises:
        EngineError: when the engine is missing or does not start.
        EndpointError: when the judges' endpoint fails for good (votes so far are kept).
        ValueError: on unusable predictions or reference split (naming the file).
    """
    out = Path(params.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pairs_path = out / "pairs.csv"
    pairs = build_pairs_file(params.systems, params.reference_split, pairs_path,
                             include_reference=params.include_reference, n_clips=params.n_clips, seed=params.seed)
    with served(params.engine, params.judges[0].base_url) as url:
        for judge in params.judges:
            run_judges(pairs_path, params.votes_db, replace(judge, base_url=url) if params.engine.kind != "none"
                       else judge)
    items = set(pairs["item_id"])
    store = VoteStore(params.votes_db)
    judges_votes, failures = store.votes(), store.failures()
    # What the store holds for this study's items (not what this run added): the same on a rerun.
    counts = [{"pool": j.pool, "votes": int(((judges_votes["pool"] == j.pool) & judges_votes["item_id"].isin(items)).sum()),
               "failures": int(((failures["pool"] == j.pool) & failures["item_id"].isin(items)).sum())}
              for j in params.judges]
    human = _human_votes(Path(params.human_dir))
    votes = pd.concat([judges_votes, human], ignore_index=True) if not human.empty else judges_votes
    votes = votes[votes["item_id"].isin(items)]  # a vote on an item the study no longer has is left out
    ratings = validate_ratings(votes.drop(columns=["created_at"]).sort_values(["pool", "rater", "item_id"])
                               .reset_index(drop=True), origin=params.votes_db)
    report = compute_agreement(ratings, human_pool=HUMAN_POOL, confidence=params.confidence)
    report["preference"] = bootstrap_preferences(ratings, n_resamples=params.n_resamples,
                                                 confidence=params.confidence, seed=params.seed,
                                                 human_pool=HUMAN_POOL)
    report["position_bias"] = position_bias(ratings)
    report["judge_runs"] = counts
    report["n_human_votes"] = int(len(human))
    write_json(out / "agreement.json", report)
    summary = _summary(report, pairs)
    write_json(out / "summary.json", summary)
    _plot(report["preference"], out / "preference.png")
    logger.info("pairwise study: %d items, %d votes (%d human); Fleiss kappa %s", len(pairs), len(ratings),
                len(human), {p: v["kappa"] for p, v in report["agreement"]["fleiss"].items()})
    return summary


def position_bias(ratings: pd.DataFrame) -> dict[str, Any]:
    """Per pool: the share of decisive votes (not ties) that picked the caption shown first.
    Orders are random per rater and item, so an unbiased rater is near 0.5."""
    out = {}
    for pool, g in ratings.groupby("pool", sort=True):
        decisive = g[g["choice"].isin(["A", "B"])]
        first = decisive["choice"] == decisive["shown_order"].str[0]  # AB shows A first, BA shows B
        n = len(decisive)
        out[str(pool)] = {"first_shown_rate": float(first.mean()) if n else None, "n_votes": int(n)}
    return out


def _summary(report: dict[str, Any], pairs: pd.DataFrame) -> dict[str, Any]:
    """The headline numbers: Fleiss kappa per pool, mean judge-vs-judge Cohen kappa, and each
    system's preference rate over all judges with its bootstrap interval."""
    agreement = report["agreement"]
    cohen = [v["kappa"] for v in agreement["judge_vs_judge"].values() if v["kappa"] is not None]
    return {"n_items": int(len(pairs)), "n_clips": int(pairs["clip_id"].nunique()), "n_votes": report["n_votes"],
            "n_human_votes": report["n_human_votes"],
            "fleiss_kappa": {p: v["kappa"] for p, v in agreement["fleiss"].items()},
            "judge_cohen_kappa_mean": sum(cohen) / len(cohen) if cohen else None,
            "first_shown_rate": {p: v["first_shown_rate"] for p, v in report["position_bias"].items()},
            "failed_judgements": {c["pool"]: c["failures"] for c in report["judge_runs"]},
            "human_vs_judge_cohen_kappa": {j: v["kappa"] for j, v in agreement["human_vs_judge"].items()},
            "preference": report["preference"].get("all judges", {})}


def _plot(preference: dict[str, Any], path: Path) -> None:
    """Each system's preference rate and bootstrap interval, one panel row per pool."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pools = list(preference)
    fig, axes = plt.subplots(len(pools), 1, figsize=(6, 1.2 + 1.1 * len(pools)), sharex=True, squeeze=False)
    for ax, pool in zip(axes[:, 0], pools, strict=True):
        systems = sorted(preference[pool])
        rates = [preference[pool][s]["rate"] for s in systems]
        err = [[r - preference[pool][s]["ci_low"] for s, r in zip(systems, rates, strict=True)],
               [preference[pool][s]["ci_high"] - r for s, r in zip(systems, rates, strict=True)]]
        ax.errorbar(rates, range(len(systems)), xerr=err, fmt="o", capsize=3)
        ax.set_yticks(range(len(systems)), systems)
        ax.axvline(0.5, color="grey", lw=0.8, ls="--")
        ax.set_title(pool, fontsize=9, loc="left")
    axes[-1, 0].set_xlim(0, 1)
    axes[-1, 0].set_xlabel("preference rate (wins + ties/2) / votes, 95% bootstrap CI over clips")
    fig.tight_layout()
    fig.savefig(path, dpi=120, metadata={"Software": None})
    plt.close(fig)
