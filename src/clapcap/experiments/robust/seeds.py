"""RobustCLAP's findings over fine-tune seeds: the claims of the benchmark, as data.

``robust_benchmark`` compares one fine-tune of each model with a paired bootstrap over test
clips; a rebuild on another CPU reversed its "no loss on the original captions" finding
(issue 15). This step fine-tunes RobustCLAP and the captions-only control with every seed
of ``robust_seeds.seeds`` (reusing the models of ``robust_train``/``robust_control`` for
their seed), scores each on the same test queries, and tests each stated finding with the
two-level bootstrap over seeds and queries of :mod:`clapcap.evaluation.seed_bootstrap`.

The base CLAP is one trained model: it is the fixed starting point of every fine-tune, and
the findings are claims about fine-tuning *it*, so it enters with a noise floor of 0 (its
own training variance is another question: a different base is a different experiment).
RobustCLAP and the control share their seeds, so they are compared seed by seed.

Writes ``conclusions`` (strict JSON, :mod:`clapcap.evaluation.conclusions`) and a Markdown
table ``findings_md``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.compute import Compute, or_default
from clapcap.data.prepare import load_dataset
from clapcap.evaluation.conclusions import (
    FindingSpec,
    evaluate_finding,
    publish_findings,
)
from clapcap.evaluation.seed_bootstrap import SeedScores
from clapcap.experiments.robust.benchmark import (
    ZS,
    ZS_MAP,
    evaluate_model,
    load_waves,
    sample_rate_of,
)
from clapcap.experiments.robust.config import RobustBenchParams, RobustSeedParams
from clapcap.robust.config import RobustTrainParams
from clapcap.robust.train import train_robust_clap
from clapcap.utils.skip import skip_if_inputs_skipped

logger = logging.getLogger(__name__)

# (id suffix, statement, benchmark, direction, metric, against, claim, uses margin)
_FINDINGS = (
    ("view2.t2a_r10.vs_base", "RobustCLAP retrieves audio from view-2 (unseen-vocabulary) captions "
     "better than the base CLAP", "view2", "t2a", "r@10", "base", "greater", False),
    ("view2.t2a_r10.vs_control", "the view-2 gain comes from the views: RobustCLAP beats the "
     "captions-only fine-tune on view-2 captions", "view2", "t2a", "r@10", "control", "greater", False),
    ("heldout.t2a_r10.vs_base", "RobustCLAP retrieves audio from held-out-vocabulary captions (words in no "
     "training caption or view) better than the base CLAP", "heldout", "t2a", "r@10", "base", "greater", False),
    ("heldout.t2a_r10.vs_control", "RobustCLAP beats the captions-only fine-tune on held-out-vocabulary "
     "captions", "heldout", "t2a", "r@10", "control", "greater", False),
    ("original.t2a_r10.vs_base", "RobustCLAP loses no text-to-audio R@10 on the original captions",
     "original", "t2a", "r@10", "base", "not_less", True),
    ("original.a2t_r10.vs_base", "RobustCLAP loses no audio-to-text R@10 on the original captions",
     "original", "a2t", "r@10", "base", "not_less", True),
    # The id predates the key's rename from map@10 and stays, so that `conclusions diff`
    # still pairs this finding across builds.
    ("zero_shot.map10.vs_base", "RobustCLAP keeps the base CLAP's zero-shot classification mAP@10 "
     "(AP@10 normalised by min(labels, 10))", ZS, "a2l", ZS_MAP, "base", "not_less", True),
)


Trainer = Callable[..., Any]  # (params, *, progress, compute) -> a result with ``model_dir``


def _seed_run(params: RobustTrainParams, study: RobustSeedParams, label: str, seed: int) -> RobustTrainParams:
    # ``track`` as the stage's: with the tracked trainer (clapcap.tracked.robust.run_robust_train)
    # every seed's fine-tune is an MLflow run; it is not part of the training's signature.
    return replace(params, optim=replace(params.optim, seed=seed), out_dir=str(Path(study.out_dir) / label / f"seed{seed}"),
                   feature_cache=str(Path(study.out_dir) / "cache"))  # audio features computed once


def seed_model_dirs(params: RobustTrainParams, study: RobustSeedParams, label: str) -> dict[int, str]:
    """Seed -> model folder, as :func:`run_seed_study` leaves them: the stage's own model for
    its seed, ``<study.out_dir>/<label>/seed<k>/model`` for the others."""
    return {seed: str(Path(params.out_dir if seed == params.optim.seed else _seed_run(params, study, label, seed).out_dir)
                      / "model")
            for seed in study.seeds}


def _seed_models(params: RobustTrainParams, study: RobustSeedParams, label: str,
                 progress: bool, compute: Compute, train: Trainer) -> dict[int, str]:
    """Seed -> model folder: the stage's own model for its seed, a fine-tune for the others."""
    out = {}
    for seed in study.seeds:
        if seed == params.optim.seed:
            out[seed] = str(Path(params.out_dir) / "model")
            continue
        run = _seed_run(params, study, label, seed)
        logger.info("fine-tuning %s with seed %d -> %s", label, seed, run.out_dir)
        out[seed] = train(run, progress=progress, compute=compute).model_dir
    return out


def _scores(pqs: dict[int, dict[str, Any]], bench: str, direction: str, metric: str) -> SeedScores:
    seeds = sorted(pqs)
    return SeedScores(np.stack([pqs[s][bench][direction][metric] for s in seeds]), tuple(seeds))


def run_seed_study(train: RobustTrainParams, control: RobustTrainParams, bench: RobustBenchParams,
                   study: RobustSeedParams, *, progress: bool = True,
                   compute: Compute | None = None, trainer: Trainer = train_robust_clap) -> list[dict]:
    """Fine-tune the missing seeds, score every model, test the findings, write them
    (training and embedding on ``compute.device``). ``trainer`` runs one fine-tune: the stage
    passes :func:`clapcap.tracked.robust.run_robust_train`, so each seed's fine-tune is an MLflow
    run when ``track`` is on (this module imports no tracking).

    Returns:
        The finding entries written to ``study.conclusions``.

    Raises:
        ValueError: when ``study.control`` or the benchmark's base/candidate are not models of
            ``bench``, or the two fine-tunes were trained with different seeds.
        FileNotFoundError: when a model folder or the paraphrase manifest is missing.
    """
    compute = or_default(compute)
    if skip_if_inputs_skipped([train.paraphrase_dir], [study.out_dir, study.results_dir, study.conclusions,
                                                       study.findings_md], stage="robust_seeds"):
        return []
    for name in (bench.base, bench.candidate, study.control):
        if name not in bench.models:
            raise ValueError(f"robust_seeds: {name!r} is not one of robust_benchmark.models {list(bench.models)}")
    if train.optim.seed != control.optim.seed:
        raise ValueError(f"robust_train.optim.seed {train.optim.seed} != robust_control.optim.seed {control.optim.seed}: "
                         "the seed study pairs them seed by seed")
    dirs = {"candidate": _seed_models(train, study, "candidate", progress, compute, trainer),
            "control": _seed_models(control, study, "control", progress, compute, trainer)}
    findings = seed_findings(bench, study, dirs, compute=compute)
    publish_findings(findings, study.conclusions, study.findings_md)
    return findings


def seed_findings(bench: RobustBenchParams, study: RobustSeedParams, dirs: dict[str, dict[int, str]], *,
                  prefix: str = "robust", compute: Compute | None = None) -> list[dict]:
    """Score the base and every seed's candidate and control (``dirs``: role -> seed -> model
    folder) on ``bench``'s dataset and test the module's findings, with ids ``<prefix>.<name>``.
    A finding whose benchmark ``bench`` lacks is not tested."""
    df = load_dataset(bench.paraphrase_dir).split(bench.split)
    waves, _ = load_waves(bench.paraphrase_dir, bench.split, sample_rate_of(bench))
    scoring = replace(bench, out_dir=study.results_dir, n_resamples=10)  # per-model CIs unused here
    base_pq, _ = evaluate_model(bench.base, bench.models[bench.base], df, waves, scoring, compute=compute)
    pqs = {role: {s: evaluate_model(f"{role}_seed{s}", d, df, waves, scoring, compute=compute)[0]
                  for s, d in seeds.items()}
           for role, seeds in dirs.items()}
    findings = []
    for suffix, statement, b, direction, metric, against, claim, with_margin in _FINDINGS:
        if b != ZS and b not in bench.benchmarks:  # e.g. no held-out view on a real dataset
            logger.info("no %r benchmark; finding %s.%s not tested", b, prefix, suffix)
            continue
        spec = FindingSpec(id=f"{prefix}.{suffix}", statement=statement, metric=f"{b}/{direction}/{metric}",
                           a=bench.candidate, b=bench.base if against == "base" else study.control,
                           claim=claim, margin=study.margin if with_margin else 0.0)
        a = _scores(pqs["candidate"], b, direction, metric)
        if against == "base":
            values = base_pq[b][direction][metric][None, :]
            other = SeedScores(values, (0,), noise_floor=0.0)
        else:
            other = _scores(pqs["control"], b, direction, metric)
        findings.append(evaluate_finding(spec, a, other, paired_seeds=against == "control",
                                         n_resamples=study.n_resamples, confidence=study.confidence))
    return findings
