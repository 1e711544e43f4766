"""The captioner's registration at the tracked edge, apart from the study's tracker
(:mod:`clapcap.tracked.captioning`) so that only ``caption_register`` fingerprints it.

- :func:`register_champion`: the study's champion (best validation score), logged as a pyfunc
  model whose page shows its evidence (its val and test scores linked to the logged model and
  its dataset, the test captions as a table, the run that trained its weights), and registered
  on evidence (:func:`clapcap.tracking.promotion.register_on_evidence`);
- :func:`load_champion`: the registered champion as a pyfunc model.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from clapcap import tracking
from clapcap.captioning.data import dump_encoder_config
from clapcap.captioning.model import frozen_lm_dir, load_captioner
from clapcap.experiments.captioning.config import CaptioningParams
from clapcap.experiments.captioning.registry import (
    BUILD_HINT,
    REGISTRATION_FILE,
    candidates,
    caption_item_scores,
    example_audio,
    select_champion,
)
from clapcap.retrieval.item_scores import ITEM_SCORES_FILE, compare_with_champion
from clapcap.tracked.captioning import EXPERIMENT
from clapcap.tracking.promotion import register_on_evidence
from clapcap.utils.io import read_json, write_json

logger = logging.getLogger(__name__)


def register_champion(params: CaptioningParams) -> dict[str, Any]:
    """Select, log and register the champion; writes ``champion.json`` (the selection) and
    ``registration.json`` (the registry's answer).

    Returns:
        ``{"name", "metric", "value", "checkpoint", "model_uri", "version", "alias", "decision", ...}``;
        ``alias`` is ``champion`` or ``challenger``, ``decision`` the promotion decision
        (reason, difference, one-sided p-value, the compared champion version).
    """
    out = Path(params.out_dir)
    best, metric = select_champion(candidates(out))
    decoding_path = write_json(out / "champion_decoding.json", best["decoding"])
    artifacts = {"captioner": str(best["checkpoint"]), "decoding": str(decoding_path)}
    lm_dir = frozen_lm_dir(best["checkpoint"])
    if lm_dir is not None:  # the checkpoint holds the projection only: the LM travels beside it
        artifacts["lm"] = lm_dir
    dump = best.get("dump") or params.dump
    encoder = dump_encoder_config(dump)
    if encoder is not None:
        artifacts["encoder_config"] = str(write_json(out / "champion_encoder.json", encoder))
        if encoder.get("checkpoint") and Path(encoder["checkpoint"]).exists():
            artifacts["encoder"] = str(encoder["checkpoint"])
        example = example_audio(params.dataset_dir)
    else:
        logger.warning("%s records no audio encoder: the champion takes embeddings, not audio", dump)
        in_dim = load_captioner(best["checkpoint"]).cfg.in_dim
        example = np.random.default_rng(0).standard_normal((2, in_dim)).astype(np.float32)
    with tracking.tracked("captioning-register", experiment="clapcap-captioning",
                          name=tracking.run_name("captioning", "register", best["name"]),
                          params={"candidate": best["name"], "metric": metric},
                          dataset_dir=params.dataset_dir, dump=dump):
        training = _training_run(best)  # inside the run: the store is the one it opened
        if training:
            tracking.log_params({"training_run_id": training})
        tracking.log_metrics({metric: best["val"]["corpus"][metric]}, scope="val")
        uri = tracking.log_loader_pyfunc_model(
            "captioner", "clapcap.captioning.serving:load_for_pyfunc", artifacts=artifacts, input_example=example)
        # The model's page: its scores linked to it and to the dataset, and the captions behind them.
        test = (best.get("test") or {}).get("corpus", {})
        tracking.log_model_metrics(uri, {**tracking.metric_keys(best["val"]["corpus"], scope="val"),
                                         **tracking.metric_keys(test, scope="test")},
                                   dataset_dir=params.dataset_dir)
        preds = read_json(best["test_predictions"])
        tracking.log_table({"clip_id": list(preds), "caption": list(preds.values())}, "test_predictions.json")
        scores = caption_item_scores(best["test_predictions"], params.dataset_dir, metric)
        tracking.log_dict(scores, ITEM_SCORES_FILE)
        decision = register_on_evidence(
            uri, params.registered_model, item_scores=scores, artifact_file=ITEM_SCORES_FILE, alias=params.alias,
            tags={"clapcap.candidate": best["name"],
                  **({f"test/{metric}": f"{test[metric]:.4f}"} if metric in test else {}),
                  **({"clapcap.training_run_id": training} if training else {})},
            compare=compare_with_champion, description=(
                f"ClipCap-style captioner: a frozen audio encoder, an MLP prefix and a language model, the "
                f"configuration with the best validation `{metric}` of the captioning study (DVC stage "
                f"`caption_register`). `@{params.alias}` moves on a paired bootstrap of the test items' "
                f"`{metric}`. Load with `mlflow.pyfunc.load_model('models:/{params.registered_model}@{params.alias}')`; "
                f"its input is {'audio' if encoder is not None else 'embeddings'}."))
    selection = {"name": best["name"], "metric": metric, "value": best["val"]["corpus"][metric],
                 "checkpoint": best["checkpoint"], "registered_model": params.registered_model,
                 "decoding": best["decoding"], "dump": best.get("dump"), "embedding_key": best.get("embedding_key"),
                 "input": "audio" if encoder is not None else "embeddings", "encoder": encoder}
    registration = {"registered_model": params.registered_model, "model_uri": uri, "version": decision["version"],
                    "alias": decision["alias"], "decision": {k: decision[k] for k in (
                        "decision", "reason", "difference", "p_value", "compared_to")}}
    # champion.json (a DVC output) holds only what the build decides, so that it is byte-stable;
    # what the registry did depends on its history (version numbers, ids): registration.json,
    # beside it, is not versioned by DVC (the MLflow store is that record).
    write_json(out / "champion.json", selection)
    write_json(out / REGISTRATION_FILE, registration)
    result = {**selection, **registration}
    logger.info("best candidate %s (%s %.4f) registered as %s v%d @%s (%s)", best["name"], metric,
                result["value"], params.registered_model, decision["version"], decision["alias"], decision["reason"])
    return result


def _training_run(best: dict[str, Any]) -> str | None:
    """The id of the run that trained the champion's weights (tagged ``clapcap.config`` by
    :meth:`MLflowTracker.run`): the candidate's own run, or for a decoding record the run whose
    checkpoint it decodes (``runs/<config>/stage<s>/best``); the newest when a rebuild made
    several; None when the study ran untracked."""
    parts = Path(str(best["checkpoint"])).parts
    configs = [*([parts[parts.index("runs") + 1]] if "runs" in parts[:-1] else []), best["name"]]
    for config in configs:
        runs = tracking.search_runs(EXPERIMENT, f"tags.`clapcap.config` = '{config}'")
        if not runs.empty:
            return str(runs.sort_values("start_time", ascending=False)["run_id"].iloc[0])
    return None


def load_champion(name: str = "clapcap-captioner", alias: str = "champion") -> Any:
    """Load the registered champion as a pyfunc model (``predict(audio paths) -> captions``).

    Raises:
        RegistryError: when no ``name@alias`` is registered (saying how to build one).
    """
    return tracking.load_pyfunc_model(f"models:/{name}@{alias}", build_hint=BUILD_HINT)
