"""The pairwise study end to end (DVC stage ``pairwise_study``, params.yaml ``pairwise``).

1. **Items**: every pair of the captioners in ``systems`` (``{name: predictions JSON}``), plus
   the first reference caption as system ``reference``, on ``n_clips`` clips of the reference
   split (seeded), written to ``<out_dir>/pairs.csv`` (:mod:`clapcap.pairwise.pairs`); and
   gold items with a known answer on ``gold_clips`` clips, ``<out_dir>/gold.csv``
   (:mod:`clapcap.pairwise.gold`).
2. **LLM judges**: the served model (``engine``, started for the step and stopped by PID,
   :mod:`clapcap.llm.engine`) judges every item and gold item in both orders per rater of
   each pool in ``judges`` (:mod:`clapcap.pairwise.llm_judge`, :mod:`clapcap.pairwise.orders`;
   a pool sets the temperature). Votes go to the SQLite store ``votes_db``, which persists: a
   rerun asks only what is missing. A judge's judgement of an item is its choice when both
   orders agree, else a tie. A judge whose gold accuracy is not above chance (Wilson lower
   bound at most 0.5) is reported as such and left out of step 4's numbers.
3. **Human votes**: every ``*.sqlite`` store in ``human_dir`` (the rating page,
   ``clapcap pairwise serve --pairs <out_dir>/pairs.csv --db <human_dir>/votes.sqlite``)
   joins the judges' votes as pool ``human``; ``human_dir`` is a dependency of the stage, so
   the next ``dvc repro`` includes new votes.
4. **Analysis** (``<out_dir>/agreement.json``, :mod:`clapcap.pairwise.agreement`): Fleiss
   kappa within each pool, Cohen kappa for every pair of judges and against the human
   consensus when there are human votes, each system's win rate (Wilson interval) and its
   preference rate with a bootstrap interval over clips, over the judges that pass the gold
   items and the human votes; each pool's position bias (the share of votes for the caption
   shown first), each judge's order consistency and gold accuracy; ``<out_dir>/summary.json``
   holds the headline numbers (a DVC metrics file) and ``<out_dir>/preference.png`` the plot.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from clapcap.llm.engine import EngineConfig, served
from clapcap.pairwise.agreement import bootstrap_preferences, compute_agreement
from clapcap.pairwise.gold import GOLD_COLUMNS, gold_accuracy, make_gold_items
from clapcap.pairwise.llm_judge import JudgeConfig, run_judges
from clapcap.pairwise.orders import combine_orders, judge_key, order_report
from clapcap.pairwise.pairs import build_pairs_file, read_reference, write_pairs
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
    gold_clips: int = 12  # clips with gold items (one per kind); 0: no gold items, every judge counts

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
    gold = _gold_items(params, out)
    with served(params.engine, params.judges[0].base_url) as url:
        for judge in params.judges:
            judge = replace(judge, base_url=url) if params.engine.kind != "none" else judge
            for path in [pairs_path, out / "gold.csv"] if not gold.empty else [pairs_path]:
                run_judges(path, params.votes_db, judge)
    items = set(pairs["item_id"])
    store = VoteStore(params.votes_db)
    judges_votes, failures = store.votes(), store.failures()
    asked = items | set(gold["item_id"])
    # What the store holds for this study's items (not what this run added): the same on a rerun.
    counts = [{"pool": j.pool, "votes": int(((judges_votes["pool"] == j.pool) & judges_votes["item_id"].isin(asked)).sum()),
               "failures": int(((failures["pool"] == j.pool) & failures["item_id"].isin(asked)).sum())}
              for j in params.judges]
    gold_report = gold_accuracy(judges_votes, gold, params.confidence) if not gold.empty else {}
    human = _human_votes(Path(params.human_dir))
    raw = pd.concat([judges_votes, human], ignore_index=True) if not human.empty else judges_votes
    raw = raw[raw["item_id"].isin(items)]  # a vote on an item the study no longer has is left out
    combined, incomplete = combine_orders(raw.drop(columns=["created_at"]))
    failing = {k for k, v in gold_report.items() if not v["passes"]}
    kept = combined[[judge_key(p, r) not in failing or p == HUMAN_POOL
                     for p, r in zip(combined["pool"], combined["rater"], strict=True)]]
    report: dict[str, Any] = {"gold": gold_report, "judges_left_out": sorted(failing),
                              "order_consistency": order_report(raw, params.confidence),
                              "incomplete_judgements": incomplete}
    if kept.empty:
        report.update({"n_votes": 0, "n_items": 0, "pools": {}, "agreement": None, "preference": {}})
    else:
        ratings = validate_ratings(kept.sort_values(["pool", "rater", "item_id"]).reset_index(drop=True),
                                   origin=params.votes_db)
        report.update(compute_agreement(ratings, human_pool=HUMAN_POOL, confidence=params.confidence))
        report["preference"] = bootstrap_preferences(ratings, n_resamples=params.n_resamples,
                                                     confidence=params.confidence, seed=params.seed,
                                                     human_pool=HUMAN_POOL)
    report["position_bias"] = position_bias(raw)
    report["judge_runs"] = counts
    report["n_human_votes"] = int(len(human))
    write_json(out / "agreement.json", report)
    summary = _summary(report, pairs)
    write_json(out / "summary.json", summary)
    _plot(report["preference"], out / "preference.png")
    logger.info("pairwise study: %d items, %d judgements (%d human votes); %s", len(pairs), report["n_votes"],
                len(human), summary["verdict"])
    return summary


def _gold_items(params: PairwiseStudyParams, out: Path) -> pd.DataFrame:
    """The study's gold items, written to ``<out>/gold.csv`` (an empty frame when ``gold_clips`` is 0)."""
    if params.gold_clips <= 0:
        (out / "gold.csv").unlink(missing_ok=True)
        return pd.DataFrame(columns=list(GOLD_COLUMNS))
    gold = make_gold_items(read_reference(params.reference_split), n_clips=params.gold_clips, seed=params.seed)
    write_pairs(gold, out / "gold.csv")
    return gold


def _verdict(report: dict[str, Any]) -> str:
    """One plain sentence on which judges count (module docstring, step 2)."""
    gold = report["gold"]
    if not gold:
        return "no gold items: every judge counts, unchecked"
    passing = sorted(k for k, v in gold.items() if v["passes"])
    if not passing:
        return (f"no judge passes the gold pairs ({len(gold)} judge(s), best accuracy "
                f"{max(v['accuracy'] for v in gold.values()):.2f} against 0.5 by chance): the judges' "
                "votes are left out; preference and agreement rest on human votes only")
    return f"{len(passing)} of {len(gold)} judge(s) pass the gold pairs: {', '.join(passing)}"


def position_bias(ratings: pd.DataFrame) -> dict[str, Any]:
    """Per pool: the share of decisive votes (not ties) that picked the caption shown first.
    Judges see each item in both orders and people in a random one, so an unbiased rater is
    near 0.5."""
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
    agreement = report["agreement"] or {"fleiss": {}, "judge_vs_judge": {}, "human_vs_judge": {}}
    cohen = [v["kappa"] for v in agreement["judge_vs_judge"].values() if v["kappa"] is not None]
    return {"n_items": int(len(pairs)), "n_clips": int(pairs["clip_id"].nunique()), "n_votes": report["n_votes"],
            "n_human_votes": report["n_human_votes"], "verdict": _verdict(report),
            "gold_accuracy": {j: v["accuracy"] for j, v in report["gold"].items()},
            "judges_left_out": report["judges_left_out"],
            "order_consistency": {j: v["consistency"] for j, v in report["order_consistency"].items()},
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
    if not pools:  # every judge failed the gold items and nobody voted yet: say so on the figure
        fig, ax = plt.subplots(figsize=(6, 1.6))
        ax.text(0.5, 0.5, "no preference: no judge passed the gold pairs, and no human votes yet",
                ha="center", va="center", fontsize=9)
        ax.set_axis_off()
        fig.savefig(path, dpi=120, metadata={"Software": None})
        plt.close(fig)
        return
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
