"""CLAP training at the tracked edge: one MLflow run of the ``train_clap`` stage (params,
provenance, per-epoch metrics, the model as a pyfunc, its test item scores) and the
registration on evidence, for the tiny CLAP and the MiniLM CLAP alike.

The steps are reached through their modules (``clap_train.train_clap``, ...), so that a test
that replaces a step in its module replaces it here too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clapcap import tracking
from clapcap.clap import train as clap_train
from clapcap.clap.config import TrainClapParams
from clapcap.clap.train import RESULT, TrainClapResult
from clapcap.compute import Compute, or_default
from clapcap.config import to_dict
from clapcap.retrieval.item_scores import ITEM_SCORES_FILE, compare_with_champion
from clapcap.tracking.promotion import (
    NOT_PROMOTED,
    SIGNATURE_TAG,
    find_registration,
    register_on_evidence,
    settle,
)
from clapcap.utils.io import sha256_json

logger = logging.getLogger(__name__)


def run_synth_clap(params: TrainClapParams, *, variant: str = "", progress: bool = True,
                   compute: Compute | None = None) -> TrainClapResult:
    """:func:`~clapcap.clap.train.train_clap` (either text tower) at its tracked edge
    (:func:`run_tracked_training`: one MLflow run of the ``train_clap`` stage, the model as a
    pyfunc, its test item scores and a registration as ``registered_model``; a rerun checks the
    registration too, and only a run under DVC moves aliases). The run is named ``synth_clap``
    (scratch tower) or ``clap_minilm``, and ``clap_<variant>`` / ``clap_minilm_<variant>`` for
    a variant.

    Returns:
        The :class:`~clapcap.clap.train.TrainClapResult` (``skipped`` when the result file
        already existed).
    """
    compute = or_default(compute)
    minilm = params.text_tower == "minilm"
    stem = "clap_minilm" if minilm else "clap"
    label = f"{stem}_{variant}" if variant else ("clap_minilm" if minilm else "synth_clap")
    return run_tracked_training(
        params, clap_train.run_signature(params, Path(params.dataset_dir), compute), compute=compute,
        label=label, model_name="clap_minilm" if minilm else "synth_clap",
        train=lambda **kw: clap_train.train_clap(params, progress=progress, compute=compute, **kw),
        item_scores=lambda model_dir: clap_train.test_item_scores(params, model_dir))


def run_tracked_training(params: Any, signature: str, *, label: str, model_name: str,
                         train: Callable[..., TrainClapResult], item_scores: Callable[[str], dict[str, Any]],
                         compute: Compute) -> TrainClapResult:
    """A CLAP training (``train(on_epoch_end=...)``) inside one MLflow run when ``params.track``:
    params, provenance, per-epoch metrics (``train/loss``, ``val/t2a/r10`` with ``step=``), the
    result file, the model, its test item scores (``item_scores(model_dir)``) and a registration
    as ``params.registered_model`` (:func:`register`).

    The registration is part of what a rerun checks: when the result file exists (training
    skipped) and a version carries this ``signature`` with its decision, nothing is done and no
    run opens; a version without its decision (a crash cut it short) is completed; no version
    at all (the run failed before registering) opens a run that logs and registers the
    trained model. Only a run under DVC (``$DVC_STAGE``) moves aliases.

    Returns:
        The :class:`TrainClapResult`.
    """
    done = clap_train._load_done(Path(params.out_dir) / RESULT, signature)
    if not params.track:
        return done or train()

    promote = tracking.dvc_stage() is not None
    found = find_registration(params.registered_model, signature, legacy_artifact=RESULT) if done else None
    # Decided, and not merely recorded by an ad-hoc run when this run may move the alias.
    if found is not None and found["decision"] is not None and not (promote and found["decision"] == NOT_PROMOTED):
        logger.info("%s v%d holds this training (decision: %s): nothing to register", params.registered_model,
                    found["version"], found["decision"])
        return done
    if found is not None:
        logger.info("%s v%d: completing its registration", params.registered_model, found["version"])
        settle_registration(params, found["version"], promote=promote)
        return done
    run_params = {**to_dict(params), "compute": compute.to_dict()}
    name = tracking.run_name("retrieval", label, sha256_json(to_dict(params))[:8], params.optim.seed)
    with tracking.tracked("train_clap", experiment="clapcap-retrieval", name=name, params=run_params,
                          dataset_dir=params.dataset_dir, system_metrics=True):
        res = done or train(on_epoch_end=log_epoch)
        for row in res.history if res.skipped else []:  # trained earlier, never registered
            log_epoch(row["epoch"], row)
        tracking.log_artifact(res.result_path)
        uri = tracking.log_loader_pyfunc_model(
            model_name, "clapcap.encoders.hf_clap:pyfunc_loader", artifacts={"clap_dir": res.model_dir},
            input_example=["a dog barks", "rain falls on a roof"])
        # The model's page shows the validation scores it was chosen on, with their dataset.
        tracking.log_model_metrics(uri, tracking.metric_keys(res.val, scope="val"), dataset_dir=params.dataset_dir)
        scores = item_scores(res.model_dir)
        tracking.log_dict(scores, ITEM_SCORES_FILE)
        register(uri, params, scores, signature=signature, promote=promote)
    return res


def log_epoch(epoch: int, row: dict[str, float]) -> None:
    """One epoch's row under the vocabulary: ``train/loss`` and the validation recalls.

    The chance levels (``chance@k = k / n_clips``) are constants of the run: they are logged as
    params (``val/chance10``; the same value at every epoch), not as metrics (as metrics they were
    the first, flat, charts of every CLAP run's validation section in the UI)."""

    tracking.log_metrics({"loss": row["loss"]}, scope="train", step=epoch)
    chance = {k: v for k, v in row.items() if k.startswith("chance@")}
    tracking.log_metrics({k: v for k, v in row.items() if k not in ("epoch", "loss", *chance)},
                         scope="val", step=epoch)
    if chance:
        tracking.log_params({tracking.metric_key(k, scope="val"): v for k, v in chance.items()})


def register(uri: str, params: Any, scores: dict[str, Any], *, signature: str | None = None,
             promote: bool = True) -> dict[str, Any]:
    """Register ``uri`` as a version of ``params.registered_model`` (tagged with the training's
    ``signature``); ``params.alias`` moves to it only when a paired bootstrap on the test items
    shows it better than the current holder (one-sided p < 0.05), else it becomes
    ``@challenger`` (also when the two cannot be compared). With ``promote`` false (a run
    outside DVC) no alias moves.

    Returns:
        The decision of :func:`clapcap.tracking.promotion.register_on_evidence`.
    """

    decision = register_on_evidence(
        uri, params.registered_model, item_scores=scores, artifact_file=ITEM_SCORES_FILE, alias=params.alias,
        compare=compare_with_champion, promote=promote, tags={SIGNATURE_TAG: signature} if signature else None,
        description=(f"A CLAP model (HF `ClapModel` format) trained by clapcap's `train_clap` stage. `@{params.alias}` "
                     f"moves on a paired bootstrap of the test items' retrieval scores. Load with "
                     f"`mlflow.pyfunc.load_model('models:/{params.registered_model}@{params.alias}')` (texts in, "
                     f"embeddings out); the model folder is the run's `clap_dir` artifact."))
    logger.info("registered %s version %d: %s (%s)", params.registered_model, decision["version"],
                f"@{decision['alias']}" if decision["alias"] else "no alias", decision["reason"])
    return decision


def settle_registration(params: Any, version: int, *, promote: bool) -> dict[str, Any]:
    """Complete the registration of ``params.registered_model`` version ``version`` from the
    item scores its run logged (:func:`clapcap.tracking.promotion.settle`).

    Raises:
        RegistryError: when the version's run carries no item scores.
    """

    scores = tracking.version_artifact_json(params.registered_model, version, ITEM_SCORES_FILE)
    return settle(params.registered_model, version, item_scores=scores, compare=compare_with_champion,
                  artifact_file=ITEM_SCORES_FILE, alias=params.alias, promote=promote)
