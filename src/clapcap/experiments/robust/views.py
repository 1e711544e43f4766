"""How many paraphrase views RobustCLAP needs: one view per caption against two.

RobustCLAP fine-tunes on each caption with two views (view 1: structure changed; view 2:
words and structure changed; :mod:`clapcap.robust.loss`). This study fine-tunes the same
model with one view only, each in turn (``variants``: loss overrides; ``view1_start_epoch``
past the last epoch turns view 1's terms off for the whole run, and likewise for view 2),
with every seed of ``robust_seeds``, and tests, over seeds and test queries, whether two
views beat each one-view variant on every benchmark of ``robust_benchmark`` (paired by seed:
the same seed's two-view model is ``robust_seeds``' candidate).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.compute import Compute, or_default
from clapcap.data.prepare import load_dataset
from clapcap.evaluation.conclusions import FindingSpec, evaluate_finding, publish_findings
from clapcap.evaluation.seed_bootstrap import SeedScores
from clapcap.experiments.robust.benchmark import evaluate_model, load_waves, sample_rate_of
from clapcap.experiments.robust.config import RobustBenchParams, RobustSeedParams
from clapcap.experiments.robust.seeds import seed_model_dirs
from clapcap.robust.config import RobustTrainParams
from clapcap.robust.train import train_robust_clap
from clapcap.utils.io import write_json

logger = logging.getLogger(__name__)


@dataclass
class ViewCountParams:
    """``params.yaml`` section ``robust_views``.

    ``runs``: ``[one_vs_two]`` where the study runs (the full study), ``[]`` where it does not
    (the reduced one; dvc.yaml's ``robust_views`` is a foreach over it).
    """

    runs: list[str] = field(default_factory=lambda: ["one_vs_two"])
    variants: dict[str, dict[str, float]] = field(default_factory=lambda: {
        "view1_only": {"view2_start_epoch": 1000.0}, "view2_only": {"view1_start_epoch": 1000.0}})
    out_dir: str = "models/robust_views"
    results_dir: str = "results/robust/views"
    conclusions: str = "results/robust/views/conclusions.json"
    findings_md: str = "results/robust/views/findings.md"
    direction: str = "t2a"
    metric: str = "r@10"

    def __post_init__(self) -> None:
        from clapcap.robust.loss import MultiViewLossConfig

        if self.runs not in ([], ["one_vs_two"]):
            raise ValueError(f"robust_views.runs: expected [one_vs_two] (the study runs) or [], found {self.runs}")

        known = set(MultiViewLossConfig.__dataclass_fields__)
        for name, overrides in self.variants.items():
            unknown = sorted(set(overrides) - known)
            if unknown:
                raise ValueError(f"robust_views.variants.{name}: unknown loss keys {unknown}; known: {sorted(known)}")


def variant_runs(train: RobustTrainParams, study: RobustSeedParams, params: ViewCountParams
                 ) -> dict[str, dict[int, RobustTrainParams]]:
    """Variant -> seed -> the fine-tune's params (the candidate's with the loss overrides)."""
    return {name: {seed: replace(train, optim=replace(train.optim, seed=seed), track=False, loss=replace(train.loss, **overrides),
                                 out_dir=str(Path(params.out_dir) / name / f"seed{seed}"),
                                 feature_cache=str(Path(params.out_dir) / "cache"))
                   for seed in study.seeds}
            for name, overrides in params.variants.items()}


def run_view_count_study(train: RobustTrainParams, bench: RobustBenchParams, study: RobustSeedParams,
                         params: ViewCountParams, *, progress: bool = True,
                         compute: Compute | None = None) -> dict[str, Any]:
    """Fine-tune every variant with every seed (resumable: a finished run is skipped), score
    them and the two-view candidate on ``bench``, test the findings; write ``views.json``.

    Returns:
        The result written to ``<results_dir>/views.json``.
    """
    compute = or_default(compute)
    dirs = {"two views": seed_model_dirs(train, study, "candidate")}
    for name, runs in variant_runs(train, study, params).items():
        dirs[name] = {}
        for seed, run in runs.items():
            logger.info("fine-tuning RobustCLAP (%s) with seed %d -> %s", name, seed, run.out_dir)
            dirs[name][seed] = train_robust_clap(run, progress=progress, compute=compute).model_dir
    scoring = replace(bench, out_dir=params.results_dir, n_resamples=10)  # the findings carry the intervals
    df = load_dataset(bench.paraphrase_dir).split(bench.split)
    waves, _ = load_waves(bench.paraphrase_dir, bench.split, sample_rate_of(bench))
    pqs = {role: {s: evaluate_model(f"{role.replace(' ', '_')}_seed{s}", d, df, waves, scoring, compute=compute)[0]
                  for s, d in by_seed.items()} for role, by_seed in dirs.items()}
    d, m = params.direction, params.metric

    def side(role: str, b: str) -> SeedScores:
        seeds = sorted(pqs[role])
        return SeedScores(np.stack([np.asarray(pqs[role][s][b][d][m], dtype=np.float64) for s in seeds]), tuple(seeds))

    findings = [evaluate_finding(
        FindingSpec(id=f"robust.views.two_vs_{name}.{b}", statement=f"RobustCLAP fine-tuned with two views per "
                    f"caption beats the one-view fine-tune ({name}) on {b} {d} {m.upper()}", metric=f"{b}/{d}/{m}",
                    a="RobustCLAP (two views)", b=f"RobustCLAP ({name})", claim="greater"),
        side("two views", b), side(name, b), paired_seeds=True,
        n_resamples=study.n_resamples, confidence=study.confidence)
        for name in params.variants for b in bench.benchmarks]
    result = {"metric": f"{d}/{m}", "split": bench.split, "variants": params.variants,
              "models": {role: {b: {"mean": float(side(role, b).seed_means.mean()),
                                    "per_seed": dict(zip(map(str, sorted(pqs[role])), side(role, b).seed_means.tolist(),
                                                         strict=True))}
                                for b in bench.benchmarks} for role in pqs}}
    write_json(Path(params.results_dir) / "views.json", result)
    publish_findings(findings, params.conclusions, params.findings_md)
    return result
