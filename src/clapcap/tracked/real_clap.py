"""The tower CLAP's stage in one MLflow run (``clapcap-retrieval``, ``retrieval/tower_clap/<params>``):
params and provenance, the chosen seed's training curve (``train/loss``, ``val/t2a/r10`` by
epoch), the test metrics of the trained heads with their bootstrap intervals (``test/t2a/r10``,
``..._ci_low``/``_ci_high``; zero-shot ``test/a2l/accuracy``), the report files, and the model (a
text-query pyfunc over ``<model_dir>/model``) registered as ``registered_model``. Only a run under
DVC (``$DVC_STAGE``) sets an alias: ``alias`` on the first version, ``challenger`` on a later one
(no promotion on evidence yet: a person promotes with ``clapcap registry promote``)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from clapcap import tracking
from clapcap.config import to_dict
from clapcap.experiments.real.clap import RealClapParams, run_real_clap
from clapcap.utils.io import sha256_json

logger = logging.getLogger(__name__)

EXAMPLE = ["a dog barking", "a soft high note on a flute"]


def log_real_clap(params: RealClapParams, metrics: dict[str, Any], history: list[dict[str, Any]]) -> int:
    """Log ``metrics`` and the model into the active run and register it; returns the version."""
    trained = metrics["test"]["tower_clap"]
    for direction, values in trained.items():
        tracking.log_metrics({m: v["value"] for m, v in values.items()}, scope="test", direction=direction)
        for stat, part in (("ci_low", "low"), ("ci_high", "high")):
            tracking.log_metrics({m: v[part] for m, v in values.items()}, scope="test", direction=direction,
                                 stat=stat)
    if metrics["zero_shot"]["tower_clap"] is not None:
        tracking.log_metrics({"accuracy": metrics["zero_shot"]["tower_clap"]}, scope="test", direction="a2l")
    for row in (r for r in history if r["seed"] == metrics["model_seed"]):
        tracking.log_metrics({"loss": row["train_loss"]}, scope="train", step=row["epoch"])
        tracking.log_metrics({"r@10": row["val_t2a_r@10"]}, scope="val", direction="t2a", step=row["epoch"])
    tracking.set_tags({"model_seed": metrics["model_seed"], "seeds": metrics["seeds"]})
    for name in ("metrics.json", "report.md", "conclusions.json", "findings.md"):
        tracking.log_artifact(Path(params.out_dir) / name, "results")
    uri = tracking.log_loader_pyfunc_model("tower_clap", "clapcap.clap.towers:pyfunc_loader",
                                           artifacts={"model_dir": str(Path(params.model_dir) / "model")},
                                           input_example=EXAMPLE)
    # The model's page shows its test scores, measured on the corpus's cross-source test split.
    tracking.log_model_metrics(uri, {
        tracking.metric_key(m, scope="test", direction=d): v["value"] for d, values in trained.items()
        for m, v in values.items()}, dataset_dir=params.dataset_dir)
    alias = None
    if tracking.dvc_stage() is not None:
        # No promotion on evidence yet (the versions' item scores are not logged): the first
        # version becomes the champion, a later one the challenger, promoted by a person with
        # `clapcap registry promote` (docs/tracking.md).
        alias = params.alias if tracking.alias_version(params.registered_model, params.alias) is None else "challenger"
    version = tracking.register_model(uri, params.registered_model, alias=alias, tags={
        "test_t2a_r10": f"{trained['t2a']['r@10']['value']:.4f}", "model_seed": str(metrics["model_seed"]),
        "dataset": params.dataset_dir})
    logger.info("%s v%d registered%s", params.registered_model, version, f" as @{alias}" if alias else "")
    return version


def run_tracked_real_clap(params: RealClapParams) -> dict[str, Any]:
    """:func:`~clapcap.experiments.real.clap.run_real_clap`, tracked when ``params.track``."""
    if not params.track:
        return run_real_clap(params)
    from clapcap.utils.io import read_json

    name = tracking.run_name("retrieval", "tower_clap", sha256_json(to_dict(params))[:8])
    with tracking.tracked("real_clap", experiment="clapcap-retrieval", name=name, params=to_dict(params),
                          dataset_dir=params.dataset_dir):
        metrics = run_real_clap(params)
        log_real_clap(params, metrics, read_json(Path(params.out_dir) / "history.json"))
    return metrics
