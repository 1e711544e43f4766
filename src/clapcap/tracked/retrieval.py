"""Retrieval evaluation at the tracked edge: one MLflow run of ``clapcap-retrieval`` per dump."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clapcap import tracking
from clapcap.config import to_dict
from clapcap.data.dump import load_meta
from clapcap.retrieval.config import RetrievalEvalParams
from clapcap.retrieval.evaluate import evaluate_all, metric_scope, metrics_path, tracking_scope

CHECKPOINT_KEYS = ("checkpoint", "checkpoint_kind", "checkpoint_revision", "checkpoint_sha256", "tokenizer")


def track_evaluation(result: dict[str, Any], dump_path: str | Path, *, params: dict[str, Any],
                     out_path: str | Path | None = None) -> dict[str, float]:
    """Log one evaluation as its own MLflow run of ``clapcap-retrieval``, named
    ``retrieval/evaluate/<encoder>/<dataset>/<split>`` (the dump's last three path parts), with the dump as
    its input: ``<scope>/t2a/r10``, ``<scope>/t2a/r10_ci_low``, ... (the scope from the dump's meta
    split, :func:`~clapcap.retrieval.evaluate.tracking_scope`; docs/tracking.md).

    Returns:
        The logged ``{key: value}``.

    Raises:
        DumpError: as :func:`~clapcap.retrieval.evaluate.tracking_scope`, before a run is opened.
    """
    meta = load_meta(dump_path)
    scope = metric_scope(meta, dump_path)
    label = "/".join(Path(dump_path).with_suffix("").parts[-3:])
    dataset = meta.get("dataset")
    dataset_dir = dataset if dataset and (Path(dataset) / "manifest.csv").is_file() else None
    # What identifies the weights (clapcap.encoders.checkpoints): the hub commit or the SHA-256,
    # so two runs of one hub id at two revisions are told apart in the runs table.
    weights = {k: meta[k] for k in CHECKPOINT_KEYS if meta.get(k) is not None}
    with tracking.tracked("evaluate_retrieval", experiment="clapcap-retrieval",
                          name=tracking.run_name("retrieval", "evaluate", label),
                          params={**params, "dump": str(dump_path), **weights}, dump=dump_path,
                          dataset_dir=dataset_dir):
        logged = tracking.log_metrics({k: v for k, v in result.items() if k in ("t2a", "a2t", "n_clips", "n_captions")},
                                      scope=scope)
        if out_path is not None:
            tracking.log_artifact(out_path)
    return logged


def run_evaluate_all(params: RetrievalEvalParams, *, device: str | None = None) -> dict[str, dict]:
    """:func:`~clapcap.retrieval.evaluate.evaluate_all`, then one MLflow run per dump when ``params.track``
    (:func:`track_evaluation`).

    Returns:
        :func:`~clapcap.retrieval.evaluate.evaluate_all`'s ``{dump path: metrics}``.

    Raises:
        DumpError: as :func:`~clapcap.retrieval.evaluate.tracking_scope` (when ``params.track``, before anything is
            written); plus the errors of :func:`~clapcap.retrieval.evaluate.evaluate_all`.
    """
    if params.track:  # a dump that cannot be logged fails before any metrics file is written
        for dump_path in params.dumps:
            tracking_scope(dump_path)
    results = evaluate_all(params, device=device)
    if params.track:
        for dump_path, result in results.items():
            track_evaluation(result, dump_path, params=to_dict(params), out_path=metrics_path(params, dump_path))
    return results
