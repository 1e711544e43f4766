"""The captioning study's analyses at the tracked edge: runs comparable in the MLflow UI.

:func:`log_lr_check` logs one architecture row's LR check (``check.json``) as a run
``captioning/<row>/lr_check``: the chosen and baseline LRs as params, the stage-1 (and, when
comparable, stage-2) regret on the search's validation loss as ``val/stage1/loss_diff``;
:func:`log_vocab` the vocabulary study, :func:`log_pipeline_vs_reference` the pipeline's
findings against the reference captioners. Apart from RobustCLAP's analyses
(:mod:`clapcap.tracked.robust_analyses`), so an edit to a RobustCLAP module reruns no captioning
stage.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from clapcap import tracking
from clapcap.tracking.vocab import metric_keys

logger = logging.getLogger(__name__)


def log_lr_check(record: dict[str, Any], *, experiment: str, enabled: bool = True,
                 dataset_dir: str | Path | None = None) -> str | None:
    """Log one row's LR check (module docstring); returns the run id (None when disabled)."""
    if not enabled:
        return None
    params = {"row": record["row"], **{f"chosen_{k}": v for k, v in record["chosen"].items()},
              **{f"baseline_{k}": v for k, v in record["baseline"].items()},
              "same_stage1": record["same_stage1"], "same_stage2": record["same_stage2"]}
    with tracking.tracked("caption_lr_check", experiment=experiment,
                          name=tracking.run_name("captioning", record["row"], "lr_check"), params=params,
                          dataset_dir=dataset_dir) as run:
        for stage in ("stage1", "stage2"):
            if record[f"{stage}_regret"] is not None:
                tracking.log_metrics({"loss": record[f"{stage}_regret"]}, scope="val", view=stage, stat="diff")
        return run.info.run_id


def run_lr_check_tracked(params: Any, lm: str, variant: str, *, compute: Any = None) -> dict[str, Any]:
    """:func:`clapcap.captioning.experiments.lr_check.run_lr_check`, then the row's check
    logged (:func:`log_lr_check`) when ``params.track``."""
    from clapcap.captioning.experiments.lr_check import run_lr_check

    record = run_lr_check(params, lm, variant, compute=compute)
    log_lr_check(record, experiment="clapcap-captioning", enabled=params.track, dataset_dir=params.dataset_dir)
    return record


def log_vocab(record: dict[str, Any], *, experiment: str, enabled: bool = True,
              dataset_dir: str | Path | None = None) -> list[str]:
    """Log ``vocab.json``: a run ``captioning/<configuration>/vocab`` per configuration (the
    mean over its seeds: ``test/vocab_mean``, ``test/mean_words_mean``, ..., and the std where
    there are seeds to take it over) and ``captioning/references/vocab`` for the references,
    all nested under one parent ``captioning/vocab``: the runs table shows one collapsed row
    for the analysis instead of one short run per configuration above the trainings."""
    if not enabled:
        return []
    parent = tracking.group_run(experiment, "captioning/vocab", stage="caption_vocab",
                                params={"configurations": len(record["configs"])}, dataset_dir=dataset_dir)
    ids = []
    rows = {config: {stat: {k: v[stat] for k, v in row.items() if isinstance(v, dict)} for stat in ("mean", "std")}
            for config, row in record["configs"].items()}
    for config, stats in rows.items():
        label = config.replace("/", "_")
        with tracking.tracked("caption_vocab", experiment=experiment,
                              name=tracking.run_name("captioning", label, "vocab"),
                              params={"configuration": config, "n_seeds": record["configs"][config]["n_seeds"]},
                              dataset_dir=dataset_dir, parent=parent) as run:
            for stat, values in stats.items():
                tracking.log_metrics({k: v for k, v in values.items() if v is not None}, scope="test", stat=stat)
            ids.append(run.info.run_id)
    with tracking.tracked("caption_vocab", experiment=experiment, name="captioning/references/vocab",
                          params={"configuration": "references"}, dataset_dir=dataset_dir, parent=parent) as run:
        tracking.log_metrics(record["references"], scope="test")
        ids.append(run.info.run_id)
    return ids


def run_vocab(params: Any) -> dict[str, Any]:
    """:func:`clapcap.evaluation.caption_vocab.vocab_study`, then logged (:func:`log_vocab`)
    when ``params.track``."""
    from clapcap.evaluation.caption_vocab import vocab_study

    record = vocab_study(params)
    log_vocab(record, experiment=params.experiment, enabled=params.track, dataset_dir=params.dataset_dir)
    return record


_PIPELINE = re.compile(r"^captioning\.pipeline\.(?P<lm>[^.]+)\.vs_(?P<ref>[^.]+)(\.(?P<subset>[^.]+))?$")


def log_pipeline_vs_reference(findings: list[dict[str, Any]], *, experiment: str, enabled: bool = True,
                              dataset_dir: str | Path | None = None) -> list[str]:
    """Log the pipeline-vs-reference findings on the whole test split and per subset (music,
    general audio): per LM a run ``captioning/<lm>/vs_<ref>`` with the pipeline's mean over
    seeds (``test/<metric>_mean``, ``test/music/<metric>_mean``) and the difference to the
    reference captioner (``..._diff``), and per reference captioner a run
    ``captioning/<ref>/subsets`` with its own scores (``test/music/<metric>``)."""
    if not enabled:
        return []
    by_lm: dict[tuple[str, str], dict[str, float]] = {}
    by_ref: dict[str, dict[str, float]] = {}
    for f in findings:
        found = _PIPELINE.match(f["id"])
        if not found:
            continue
        lm, ref, subset = found["lm"], found["ref"], found["subset"]
        keyed = by_lm.setdefault((lm, ref), {})
        keyed.update(metric_keys({f["metric"]: f["a"]}, scope="test", view=subset, stat="mean"))
        keyed.update(metric_keys({f["metric"]: f["effect"]}, scope="test", view=subset, stat="diff"))
        by_ref.setdefault(ref, {}).update(metric_keys({f["metric"]: f["b"]}, scope="test", view=subset))
    ids = []
    for (lm, ref), keyed in by_lm.items():
        with tracking.tracked("caption_findings", experiment=experiment,
                              name=tracking.run_name("captioning", lm, f"vs_{ref}"),
                              params={"lm": lm, "reference": ref}, dataset_dir=dataset_dir) as run:
            tracking.log_keyed(keyed)
            ids.append(run.info.run_id)
    for ref, keyed in by_ref.items():
        with tracking.tracked("caption_findings", experiment=experiment,
                              name=tracking.run_name("captioning", ref, "subsets"),
                              params={"reference": ref}, dataset_dir=dataset_dir) as run:
            tracking.log_keyed(keyed)
            ids.append(run.info.run_id)
    return ids


def run_findings_tracked(params: Any, subsets: dict[str, list[str]] | None = None) -> list[dict[str, Any]]:
    """:func:`clapcap.captioning.experiments.findings.run_findings`, then the
    pipeline-vs-reference findings logged (:func:`log_pipeline_vs_reference`) when
    ``params.track``."""
    from clapcap.captioning.experiments.findings import run_findings

    findings = run_findings(params, subsets)
    log_pipeline_vs_reference(findings, experiment="clapcap-captioning", enabled=params.track,
                              dataset_dir=params.dataset_dir)
    return findings
