"""RobustCLAP trained on an LLM's paraphrase views against the corpus lexicon's: the view-source study.

RobustCLAP (``robust_train``) trains on the synthetic corpus's lexicon views. The paper makes
its views with an LLM. The LLM stage (``robust_paraphrase_llm``) paraphrases the training
captions it is given (its ``max_clips`` / ``captions_per_clip``: on 2 CPU cores the served
135 M model takes about 6 s a caption, so the embedded default takes a subset). This study
fine-tunes the base CLAP on exactly those training captions three ways, with every seed of
``robust_seeds``:

- ``llm``: with the LLM's views (a view the LLM stage dropped is masked out of its loss terms);
- ``lexicon``: with the lexicon's views of the same captions, masked wherever the LLM's are,
  so the two runs differ only in the text of the views;
- ``none``: the same captions without views (``robust_control``'s loss).

Each is scored on ``robust_benchmark``'s test queries (original captions, view 1, view 2, the
held-out view) and the findings below are tested over seeds and queries, paired by seed.

Training length: ``epochs: null`` gives the subset as many optimizer steps as
``robust_train``'s fine-tune of the whole training split (the subset is small: at
``robust_train``'s epochs it would take a few steps only). Validation runs after the last
epoch only (the weights do not depend on it).

With the LLM stage covering the whole training split (``max_clips`` and ``captions_per_clip``
null; hours on 2 cores, minutes on a GPU behind vLLM), ``llm`` is RobustCLAP trained on the
LLM's views (docs/robust.md, "Training on the LLM's views").
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clapcap.compute import Compute, or_default
from clapcap.data.manifest import write_manifest
from clapcap.data.prepare import load_dataset
from clapcap.evaluation.conclusions import FindingSpec, evaluate_finding, publish_findings
from clapcap.evaluation.seed_bootstrap import SeedScores
from clapcap.experiments.robust.benchmark import evaluate_model, load_waves, sample_rate_of
from clapcap.experiments.robust.config import RobustBenchParams, RobustSeedParams
from clapcap.robust.config import RobustTrainParams
from clapcap.robust.data import VIEW_COLUMNS, valid_text
from clapcap.robust.train import train_robust_clap
from clapcap.utils.io import write_json

logger = logging.getLogger(__name__)

SOURCES = ("llm", "lexicon", "none")
LABELS = {"llm": "LLM views", "lexicon": "lexicon views", "none": "no views"}

# (id suffix, statement, benchmark, a, b, claim, uses margin)
_FINDINGS = (
    ("llm.view2.vs_none", "fine-tuning on the LLM's views beats the same fine-tune without views on view-2 captions",
     "view2", "llm", "none", "greater", False),
    ("llm.heldout.vs_none", "fine-tuning on the LLM's views beats the same fine-tune without views on "
     "held-out-vocabulary captions", "heldout", "llm", "none", "greater", False),
    ("llm.original.vs_none", "fine-tuning on the LLM's views loses nothing on the original captions against "
     "the same fine-tune without views", "original", "llm", "none", "not_less", True),
    ("lexicon.view2.vs_none", "on the same captions, the lexicon's views beat no views on view-2 captions "
     "(the lexicon's effect at this subset's size)", "view2", "lexicon", "none", "greater", False),
    ("llm.heldout.vs_lexicon", "the LLM's views do as well as the lexicon's on held-out-vocabulary captions",
     "heldout", "llm", "lexicon", "not_less", True),
    ("llm.view2.vs_lexicon", "the LLM's views do as well as the lexicon's on view-2 captions (whose words are "
     "the lexicon's)", "view2", "llm", "lexicon", "not_less", True),
)


@dataclass
class ViewSourceParams:
    """``params.yaml`` section ``robust_view_source``.

    Attributes:
        llm_dir: the LLM stage's manifest (``robust_paraphrase_llm.out_dir``); its train rows
            are the captions this study trains on.
        lexicon_dir: the lexicon views' manifest (``robust_paraphrase.out_dir``): the same
            captions' lexicon views and the validation split.
        manifests_dir: the matched training manifests, ``<manifests_dir>/<llm|lexicon>/``.
        epochs: null = as many optimizer steps as ``robust_train`` on the whole training split.
        runs: ``[llm]`` where the study runs (the full study), ``[]`` where it does not (the
            reduced one): dvc.yaml's ``robust_paraphrase_llm`` and ``robust_view_source`` stages
            are a foreach over it, since DVC has no conditional stage.
    """

    llm_dir: str = "results/robust/view_source/llm_views"
    lexicon_dir: str = "data/robust/paraphrased"
    manifests_dir: str = "data/robust/view_source"
    out_dir: str = "models/robust_view_source"
    results_dir: str = "results/robust/view_source"
    conclusions: str = "results/robust/view_source/conclusions.json"
    findings_md: str = "results/robust/view_source/findings.md"
    epochs: int | None = None
    direction: str = "t2a"
    metric: str = "r@10"
    runs: list[str] = field(default_factory=lambda: ["llm"])

    def __post_init__(self) -> None:
        if self.runs not in ([], ["llm"]):
            raise ValueError(f"robust_view_source.runs: expected [llm] (the study runs) or [], found {self.runs}")
        if self.epochs is not None and self.epochs < 1:
            raise ValueError(f"robust_view_source.epochs: expected >= 1 or null, found {self.epochs}")


def matched_manifests(lexicon: pd.DataFrame, llm: pd.DataFrame, *, origin: str = "llm manifest"
                      ) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """The LLM manifest's train captions with the LLM's views and with the lexicon's, each view
    kept only where both sources have it; the lexicon manifest's validation rows in both.

    Returns:
        ``({"llm": df, "lexicon": df}, counts)``; counts: clips, captions, views kept per view.

    Raises:
        ValueError: naming the clip or caption when the LLM manifest has no train rows, or a
            train clip or caption that the lexicon manifest lacks.
    """
    train = llm[llm["split"] == "train"]
    if train.empty:
        raise ValueError(f"{origin}: no train clips; the view-source study trains on the LLM's views of training "
                         "captions (add train to robust_paraphrase_llm.splits)")
    lex = lexicon.set_index("clip_id", drop=False)
    rows: dict[str, list[dict[str, Any]]] = {"llm": [], "lexicon": []}
    kept = dict.fromkeys(VIEW_COLUMNS, 0)
    n_captions = 0
    for _, row in train.iterrows():
        cid = row["clip_id"]
        if cid not in lex.index:
            raise ValueError(f"{origin}: train clip {cid} is not in the lexicon manifest")
        base = lex.loc[cid].to_dict()
        lex_caps = list(base["captions"])
        missing = [c for c in row["captions"] if c not in lex_caps]
        if missing:
            raise ValueError(f"{origin}: clip {cid}: caption {missing[0]!r} is not one of its lexicon captions")
        index = [lex_caps.index(c) for c in row["captions"]]
        views: dict[str, dict[str, list[str | None]]] = {"llm": {}, "lexicon": {}}
        for view, col in VIEW_COLUMNS.items():
            mine = [row[col][k] for k in range(len(index))]
            theirs = [base[col][i] for i in index]
            both = [valid_text(a) and valid_text(b) for a, b in zip(mine, theirs, strict=True)]
            views["llm"][col] = [a if ok else None for a, ok in zip(mine, both, strict=True)]
            views["lexicon"][col] = [b if ok else None for b, ok in zip(theirs, both, strict=True)]
            kept[view] += sum(both)
        n_captions += len(index)
        for source in rows:
            rows[source].append({**base, "captions": list(row["captions"]), **views[source]})
    val = lexicon[lexicon["split"] == "val"]
    out = {source: pd.concat([pd.DataFrame(r), val], ignore_index=True) for source, r in rows.items()}
    return out, {"n_clips": len(train), "n_captions": n_captions, "n_views": kept}


def write_matched(params: ViewSourceParams) -> dict[str, Any]:
    """Write the two matched manifests (``<manifests_dir>/<source>/``); returns the counts."""
    lex = load_dataset(params.lexicon_dir)
    frames, counts = matched_manifests(lex.manifest, load_dataset(params.llm_dir).manifest,
                                       origin=f"{params.llm_dir}/manifest.csv")
    for source, df in frames.items():
        out = Path(params.manifests_dir) / source
        write_manifest(df, out / "manifest.csv")
        root = Path(os.path.relpath(lex.root.resolve(), out.resolve())).as_posix()
        write_json(out / "dataset.json", {"root": root, "source": f"view_source:{source}", "n_clips": len(df)})
    logger.info("view-source study: %d train clips, %d captions, views kept %s", counts["n_clips"],
                counts["n_captions"], counts["n_views"])
    return counts


def matched_epochs(train: RobustTrainParams, n_full: int, n_subset: int) -> int:
    """Epochs that give ``n_subset`` clips about as many optimizer steps as ``train.optim.epochs``
    over ``n_full`` clips (a batch of fewer than 2 clips is skipped, as in training)."""
    def steps(n: int) -> int:
        return n // train.optim.batch_size + (n % train.optim.batch_size >= 2)

    full = train.optim.epochs * steps(max(2, int(round(train.data_fraction * n_full))))
    return max(1, math.ceil(full / max(1, steps(n_subset))))


def source_runs(train: RobustTrainParams, control: RobustTrainParams, study: RobustSeedParams,
                params: ViewSourceParams, epochs: int) -> dict[str, dict[int, RobustTrainParams]]:
    """Source -> seed -> the fine-tune's params."""
    def run(source: str, seed: int) -> RobustTrainParams:
        manifest = Path(params.manifests_dir) / ("lexicon" if source == "lexicon" else "llm")
        return replace(train, paraphrase_dir=str(manifest), optim=replace(train.optim, seed=seed, epochs=epochs),
                       track=False, eval_every=epochs,
                       data_fraction=1.0, loss=control.loss if source == "none" else train.loss,
                       out_dir=str(Path(params.out_dir) / source / f"seed{seed}"),
                       feature_cache=str(Path(params.out_dir) / "cache"))

    return {source: {seed: run(source, seed) for seed in study.seeds} for source in SOURCES}


def run_view_source_study(train: RobustTrainParams, control: RobustTrainParams, bench: RobustBenchParams,
                          study: RobustSeedParams, params: ViewSourceParams, *, progress: bool = True,
                          compute: Compute | None = None) -> dict[str, Any]:
    """Write the matched manifests, fine-tune every source with every seed (a finished run is
    skipped on a rerun), score them and the base on ``bench``, test the findings; write
    ``<results_dir>/view_source.json`` and the findings.

    Returns:
        The result written to ``view_source.json``.
    """
    compute = or_default(compute)
    counts = write_matched(params)
    n_full = int((load_dataset(params.lexicon_dir).manifest["split"] == "train").sum())
    epochs = params.epochs or matched_epochs(train, n_full, counts["n_clips"])
    dirs: dict[str, dict[int, str]] = {}
    for source, runs in source_runs(train, control, study, params, epochs).items():
        dirs[source] = {}
        for seed, run in runs.items():
            logger.info("fine-tuning on %s with seed %d -> %s (%d epochs)", LABELS[source], seed, run.out_dir, epochs)
            dirs[source][seed] = train_robust_clap(run, progress=progress, compute=compute).model_dir
    scoring = replace(bench, out_dir=params.results_dir, n_resamples=10)  # the findings carry the intervals
    df = load_dataset(bench.paraphrase_dir).split(bench.split)
    waves, _ = load_waves(bench.paraphrase_dir, bench.split, sample_rate_of(bench))
    d, m = params.direction, params.metric
    base_pq, _ = evaluate_model(bench.base, bench.models[bench.base], df, waves, scoring, compute=compute)
    pqs = {source: {s: evaluate_model(f"view_source_{source}_seed{s}", path, df, waves, scoring, compute=compute)[0]
                    for s, path in by_seed.items()} for source, by_seed in dirs.items()}

    def side(source: str, b: str) -> SeedScores:
        seeds = sorted(pqs[source])
        return SeedScores(np.stack([np.asarray(pqs[source][s][b][d][m], dtype=np.float64) for s in seeds]),
                          tuple(seeds))

    findings = []
    for suffix, statement, b, a, other, claim, with_margin in _FINDINGS:
        if b not in bench.benchmarks:
            logger.info("no %r benchmark; finding robust.view_source.%s not tested", b, suffix)
            continue
        spec = FindingSpec(id=f"robust.view_source.{suffix}", statement=statement, metric=f"{b}/{d}/{m}",
                           a=f"fine-tune ({LABELS[a]})", b=f"fine-tune ({LABELS[other]})", claim=claim,
                           margin=study.margin if with_margin else 0.0)
        findings.append(evaluate_finding(spec, side(a, b), side(other, b), paired_seeds=True,
                                         n_resamples=study.n_resamples, confidence=study.confidence))
    models: dict[str, Any] = {bench.base: {b: {"mean": float(np.mean(base_pq[b][d][m]))} for b in bench.benchmarks}}
    for source in SOURCES:
        models[f"fine-tune ({LABELS[source]})"] = {
            b: {"mean": float(side(source, b).seed_means.mean()),
                "per_seed": dict(zip(map(str, sorted(pqs[source])), side(source, b).seed_means.tolist(), strict=True))}
            for b in bench.benchmarks}
    result = {"metric": f"{d}/{m}", "split": bench.split, "epochs": epochs, "n_full_train_clips": n_full,
              "subset": counts, "seeds": list(study.seeds), "models": models}
    write_json(Path(params.results_dir) / "view_source.json", result)
    publish_findings(findings, params.conclusions, params.findings_md)
    return result
