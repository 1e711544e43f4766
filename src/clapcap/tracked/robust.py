"""RobustCLAP at the tracked edge: the fine-tune's run (per-epoch metrics) and the benchmark's
runs (a parent with the paired differences, a child per model) with the candidate's registration."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from clapcap import tracking
from clapcap.compute import Compute, or_default
from clapcap.config import to_dict
from clapcap.experiments.robust.benchmark import candidate_item_scores, run_benchmark
from clapcap.experiments.robust.config import ZS, RobustBenchParams
from clapcap.retrieval.item_scores import ITEM_SCORES_FILE
from clapcap.robust.config import RobustTrainParams
from clapcap.robust.data import VIEW_COLUMNS
from clapcap.robust.train import RESULT, RobustTrainResult, robust_model_label, train_robust_clap
from clapcap.tracking.promotion import register_on_evidence
from clapcap.tracking.vocab import metric_keys
from clapcap.utils.io import sha256_json
from clapcap.utils.skip import skip_if_inputs_skipped

logger = logging.getLogger(__name__)


def run_robust_train(params: RobustTrainParams, *, progress: bool = True,
                     compute: Compute | None = None) -> RobustTrainResult:
    """:func:`train_robust_clap` inside one MLflow run (when ``params.track``): params,
    provenance, per-epoch metrics (``train/loss``; ``val/t2a/r10`` and ``val/view2/t2a/r10``,
    with ``step=``), the result file. A skipped training (result exists) opens no run.

    Returns:
        The training result.
    """
    compute = or_default(compute)
    out = Path(params.out_dir)
    # The stage's outputs (dvc.yaml); a shared feature cache elsewhere is left alone.
    outs = [out / "model", out / RESULT, out / "checkpoints", *([] if params.feature_cache else [out / "cache"])]
    if skip_if_inputs_skipped([params.paraphrase_dir], outs,
                              stage=f"robust_train ({robust_model_label(params)})"):
        return RobustTrainResult(model_dir="", result_path="", base_model="", history=[], val={}, n_train_clips=0,
                                 added_words=[], skipped=True)
    if not params.track or (Path(params.out_dir) / RESULT).is_file():
        return train_robust_clap(params, progress=progress, compute=compute)
    run_params = {**to_dict(params), "compute": compute.to_dict()}
    name = tracking.run_name("robust", robust_model_label(params), sha256_json(to_dict(params))[:8], params.optim.seed)
    with tracking.tracked("robust_train", experiment=params.experiment, name=name, params=run_params,
                          dataset_dir=params.paraphrase_dir, tags={"base_model": params.base_model},
                          system_metrics=True):
        result = train_robust_clap(params, progress=progress, compute=compute, on_epoch_end=log_epoch)
        tracking.log_artifact(result.result_path)
    return result


def log_epoch(epoch: int, row: dict[str, float]) -> None:
    """One epoch's row under the vocabulary: ``train/loss``, then the validation recalls of
    the captions (``val/t2a/r10``) and of each view (``val/view2/t2a/r10``)."""
    tracking.log_metrics({"loss": row["loss"]}, scope="train", step=epoch)
    views = {view: {k[len(view) + 1:]: v for k, v in row.items() if k.startswith(f"{view}_")} for view in VIEW_COLUMNS}
    rest = {k: v for k, v in row.items()
            if k not in ("epoch", "loss") and not any(k.startswith(f"{w}_") for w in VIEW_COLUMNS)}
    tracking.log_metrics(rest, scope="val", step=epoch)  # an epoch without validation logs nothing here
    for view, metrics in views.items():
        tracking.log_metrics(metrics, scope="val", view=view, step=epoch)


def model_metrics(result: dict[str, Any], name: str) -> dict[str, float]:
    """Vocabulary keys of model ``name``'s scores: ``test/t2a/r10`` (original captions),
    ``test/view2/t2a/r10``, ``test/a2l/map10`` (zero-shot), intervals and ``_drop`` (view minus
    original)."""
    split, out = result["split"], {}
    for bench, m in result["models"][name].items():
        view = None if bench == ZS else bench
        dirs = {"a2l": m} if bench == ZS else {d: m[d] for d in ("t2a", "a2t")}
        for d, vals in dirs.items():
            out.update(metric_keys(vals, scope=split, view=view, direction=d))
    for bench, dr in result["drops"][name].items():
        for d, vals in dr.items():
            out.update(metric_keys({k: v["difference"] for k, v in vals.items()}, scope=split, view=bench,
                                   direction=d, stat="drop"))
    return out


def paired_metrics(result: dict[str, Any]) -> dict[str, float]:
    """Vocabulary keys of the candidate-minus-base paired bootstrap: ``_diff`` and ``_p``."""
    out: dict[str, float] = {}
    for bench, pr in result["paired"].items():
        view = None if bench == ZS else bench
        for d, vals in pr.items():
            for stat, field_ in (("diff", "difference"), ("p", "p_value")):
                out.update(metric_keys({k: v[field_] for k, v in vals.items()}, scope=result["split"], view=view,
                                       direction=d, stat=stat))
    return out


def run_robust_benchmark(params: RobustBenchParams, *, compute: Compute | None = None) -> dict[str, Any]:
    """:func:`run_benchmark` inside MLflow (when ``params.track``): a parent run with the
    paired differences and the reports, one child run per model with its scores; registers
    the candidate as ``registered_model`` (alias ``alias``) when it beats the base.

    Returns:
        The benchmark result, with ``register.version`` when the model was registered.
    """
    compute = or_default(compute)
    out = Path(params.out_dir)
    if skip_if_inputs_skipped([params.paraphrase_dir], [out / "dumps", *(out / f"benchmark{ext}" for ext in
                                                                          (".json", ".md", ".tex"))],
                              stage="robust_benchmark"):
        return {"skipped": True}
    if not params.track:
        return run_benchmark(params, compute=compute)
    with tracking.tracked("robust_benchmark", experiment=params.experiment,
                          name=tracking.run_name("robust", "benchmark", params.split),
                          params={**to_dict(params), "compute": compute.to_dict()},
                          dataset_dir=params.paraphrase_dir):
        result = run_benchmark(params, compute=compute)
        tracking.log_keyed(paired_metrics(result))
        for name in ("benchmark.json", "benchmark.md", "benchmark.tex"):
            tracking.log_artifact(Path(params.out_dir) / name)
        tracking.set_tags({"register": result["register"]["decision"], "register_reason": result["register"]["reason"]})
        for model, path in params.models.items():
            with tracking.tracked("robust_benchmark", experiment=params.experiment,
                                  name=tracking.run_name("robust", "benchmark", params.split) + f"/{model}",
                                  params={"model": model, "model_dir": path, "split": params.split},
                                  dataset_dir=params.paraphrase_dir):
                tracking.log_keyed(model_metrics(result, model))
        if result["register"]["decision"]:
            uri = tracking.log_loader_pyfunc_model(
                "robust_clap", "clapcap.encoders.hf_clap:pyfunc_loader",
                artifacts={"clap_dir": params.models[params.candidate]},
                input_example=["a dog barks", "rain falls on a roof"])
            scores = candidate_item_scores(params)
            tracking.log_dict(scores, ITEM_SCORES_FILE)
            result["register"].update(_promote(uri, params, scores))
    return result


def _promote(uri: str, params: RobustBenchParams, scores: dict[str, Any]) -> dict[str, Any]:
    """Register a new version; ``@champion`` moves to it only when there is none, or when it
    beats the current champion on ``register_metric`` of ``register_benchmark`` (paired
    bootstrap, one-sided p < 0.05); otherwise it is ``@challenger`` (docs/tracking.md)."""
    from clapcap.retrieval.item_scores import compare_with_champion

    decision = register_on_evidence(
        uri, params.registered_model, item_scores=scores, artifact_file=ITEM_SCORES_FILE, alias=params.alias,
        compare=compare_with_champion, description=(
            f"RobustCLAP: the synthetic CLAP fine-tuned with a multi-view contrastive loss on paraphrase views "
            f"(DVC stage `robust_train`; benchmark `robust_benchmark`). `@{params.alias}` moves on a paired "
            f"bootstrap of `{params.register_metric}` on the `{params.register_benchmark}` test captions. "
            f"Load with `mlflow.pyfunc.load_model('models:/{params.registered_model}@{params.alias}')`."))
    logger.info("registered %s version %d: @%s (%s)", params.registered_model, decision["version"],
                decision["alias"], decision["reason"])
    return {"version": decision["version"], "alias": decision["alias"], "promotion": decision["reason"],
            "compared_to": decision["compared_to"]}
