"""The captioning study's findings at the tracked edge: :func:`log_pipeline_vs_reference` logs
the pipeline's findings against the reference captioners as runs comparable in the MLflow UI.
One module per step, so the stage's code fingerprint holds its own study only.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from clapcap import tracking
from clapcap.tracking.vocab import metric_keys

_PIPELINE = re.compile(r"^(?P<study>[a-z_]+)\.pipeline\.(?P<lm>[^.]+)\.vs_(?P<ref>[^.]+)(\.(?P<subset>[^.]+))?$")


def log_pipeline_vs_reference(findings: list[dict[str, Any]], *, experiment: str, enabled: bool = True,
                              dataset_dir: str | Path | None = None) -> list[str]:
    """Log the pipeline-vs-reference findings on the whole test split and per subset (music,
    general audio): per LM a run ``captioning/<lm>/vs_<ref>`` with the pipeline's mean over
    seeds (``test/<metric>_mean``, ``test/music/<metric>_mean``) and the difference to the
    reference captioner (``..._diff``), and per reference captioner a run
    ``captioning/<ref>/subsets`` with its own scores (``test/music/<metric>``). The real
    corpus's study names its runs ``real_captioning/...`` (its findings' prefix)."""
    if not enabled:
        return []
    by_lm: dict[tuple[str, str, str], dict[str, float]] = {}
    by_ref: dict[tuple[str, str], dict[str, float]] = {}
    for f in findings:
        found = _PIPELINE.match(f["id"])
        if not found:
            continue
        study, lm, ref, subset = found["study"], found["lm"], found["ref"], found["subset"]
        keyed = by_lm.setdefault((study, lm, ref), {})
        keyed.update(metric_keys({f["metric"]: f["a"]}, scope="test", view=subset, stat="mean"))
        keyed.update(metric_keys({f["metric"]: f["effect"]}, scope="test", view=subset, stat="diff"))
        by_ref.setdefault((study, ref), {}).update(metric_keys({f["metric"]: f["b"]}, scope="test", view=subset))
    ids = []
    for (study, lm, ref), keyed in by_lm.items():
        with tracking.tracked("caption_findings", experiment=experiment,
                              name=tracking.run_name(study, lm, f"vs_{ref}"),
                              params={"lm": lm, "reference": ref}, dataset_dir=dataset_dir) as run:
            tracking.log_keyed(keyed)
            ids.append(run.info.run_id)
    for (study, ref), keyed in by_ref.items():
        with tracking.tracked("caption_findings", experiment=experiment,
                              name=tracking.run_name(study, ref, "subsets"),
                              params={"reference": ref}, dataset_dir=dataset_dir) as run:
            tracking.log_keyed(keyed)
            ids.append(run.info.run_id)
    return ids


def run_findings_tracked(params: Any, subsets: dict[str, list[str]] | None = None,
                         section: str = "captioning") -> list[dict[str, Any]]:
    """:func:`clapcap.experiments.captioning.findings.run_findings` for the study of the
    params.yaml ``section`` (``findings.STUDIES``), then the pipeline-vs-reference findings
    logged (:func:`log_pipeline_vs_reference`) when ``params.track``."""
    from clapcap.experiments.captioning.findings import STUDIES, run_findings

    findings = run_findings(params, subsets, STUDIES[section])
    log_pipeline_vs_reference(findings, experiment="clapcap-captioning", enabled=params.track,
                              dataset_dir=params.dataset_dir)
    return findings
