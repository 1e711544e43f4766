"""Paraphrase views at the tracked edge: one MLflow run of the ``robust_paraphrase`` step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clapcap import tracking
from clapcap.config import to_dict
from clapcap.paraphrase.dataset import ParaphraseParams, corpus_views_missing, paraphrase_dataset
from clapcap.utils.skip import mark_skipped


def run_paraphrase(params: ParaphraseParams, *, progress: bool = True, stage: str = "robust_paraphrase") -> dict[str, Any]:
    """:func:`paraphrase_dataset` inside an MLflow run (when ``params.track``): params (never
    the API key, which is not a parameter), counts, and the report. Returns the report.

    A real dataset (no corpus views) with the corpus backend is skipped, not an error: the
    output folder holds ``SKIPPED.json`` (:mod:`clapcap.utils.skip`) and the RobustCLAP
    stages after it skip too. Returns ``{"skipped": reason}`` then.
    """
    reason = corpus_views_missing(params)
    if reason is not None:
        mark_skipped([params.out_dir], stage=stage, reason=reason)
        return {"skipped": reason}
    if not params.track:
        return paraphrase_dataset(params, progress=progress)
    with tracking.tracked(stage, experiment=params.experiment, params=to_dict(params),
                          name=tracking.run_name("robust", "paraphrase", params.backend),
                          dataset_dir=params.dataset_dir):
        report = paraphrase_dataset(params, progress=progress)
        tracking.log_metrics({k: v for k, v in report.items() if k not in ("failures", "n_views", "acceptance")},
                             scope="data")
        for view, count in report["n_views"].items():  # data/view1/n_captions
            tracking.log_metrics({"n_captions": count}, scope="data", view=view)
        for view, rates in report.get("acceptance", {}).items():  # data/view1/kept_rate, data/all/...
            tracking.log_metrics({k: v for k, v in rates.items() if k.endswith("_rate")}, scope="data", view=view)
        tracking.log_artifact(Path(params.out_dir) / "paraphrase_report.json")
    return report
