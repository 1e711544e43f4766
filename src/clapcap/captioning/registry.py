"""Champion selection and MLflow registration of the captioner.

:func:`register_champion` picks, among every finished run and decoding configuration of
the study, the one with the best primary metric on the VALIDATION split, logs it as an
MLflow pyfunc model and registers it as a new version of ``registered_model``. The alias
``champion`` moves to that version only on evidence
(:func:`clapcap.tracking.promotion.register_on_evidence`): when there is no champion yet, or
when a paired bootstrap over the test clips shows it better than the current champion on the
primary metric (one-sided p < 0.05). Otherwise the version becomes ``@challenger``. Each
version carries its per-clip test scores (:func:`caption_item_scores`) for that comparison.

The logged model takes **audio** (file paths) and returns captions: it bundles the
captioner, its decoding config and the frozen audio encoder recorded in the champion's
embedding dump (``meta["encoder"]``; a local checkpoint folder or file is copied into the
model's artifacts). A dump that records no encoder gives an embeddings-in model instead, and
``champion.json`` says which (``"input"``). See :mod:`clapcap.captioning.serving`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.captioning.config import CaptioningParams
from clapcap.captioning.data import dump_encoder_config
from clapcap.captioning.model import frozen_lm_dir, load_captioner
from clapcap.data.manifest import resolve_audio_path
from clapcap.data.prepare import load_dataset
from clapcap.retrieval.item_scores import ITEM_SCORES_FILE, compare_with_champion
from clapcap.utils.io import read_json, write_json
from clapcap.utils.skip import skip_reason

logger = logging.getLogger(__name__)

REGISTRATION_FILE = "registration.json"  # beside champion.json; git-ignored, not a DVC output

# How a store without a registered captioner gets one (the error of loading ``captioner@champion``).
BUILD_HINT = ("Build and register one with `dvc repro caption_register` (it runs the captioning study first), "
              "or `clapcap captioning register` once the study's results exist.")


def candidates(out_dir: str | Path) -> list[dict[str, Any]]:
    """Every finished run (``results/*.json``) and decoding record (``decoding/<lm>/seed<k>/*.json``),
    but the music-subset runs, whose validation split is another set of clips."""
    out = Path(out_dir)
    found = []
    for path in sorted(out.glob("results/[!.]*.json")):
        if skip_reason(path) is not None:  # a music run on a dataset without music clips
            continue
        rec = read_json(path)
        if rec["spec"]["kind"] == "music":  # scored on the music subset's val split: not comparable
            continue
        found.append({"name": path.stem, "checkpoint": rec["checkpoint"], "decoding": rec["decoding"],
                      "dump": rec["spec"]["dump"], "embedding_key": rec["spec"]["embedding_key"], "val": rec["val"],
                      "test_predictions": str(out / "runs" / path.stem / "test_predictions.json")})
    for path in sorted(out.glob("decoding/*/seed*/[!.]*.json")):
        if path.name.endswith(".predictions.json"):
            continue
        rec = read_json(path)
        found.append({"name": f"{rec['lm']}_decoding_{rec['name']}_seed{rec['seed']}", "checkpoint": rec["checkpoint"],
                      "decoding": rec["decoding"], "dump": None, "embedding_key": None, "val": rec["val"],
                      "test_predictions": str(path.with_suffix(".predictions.json"))})
    return found


def select_champion(found: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
    """The candidate with the highest validation primary metric, and that metric's name.

    Raises:
        ValueError: when there is no candidate or none has the primary metric.
    """
    if not found:
        raise ValueError("no finished captioning runs to select a champion from")
    metric = found[0]["val"].get("primary")
    scored = [c for c in found if metric in c["val"].get("corpus", {})]
    if not scored:
        raise ValueError(f"no candidate has validation metric {metric!r}")
    return max(scored, key=lambda c: (c["val"]["corpus"][metric], c["name"])), metric


def register_champion(params: CaptioningParams) -> dict[str, Any]:
    """Select, log and register the champion; writes ``champion.json`` (the selection) and
    ``registration.json`` (the registry's answer).

    Returns:
        ``{"name", "metric", "value", "checkpoint", "model_uri", "version", "alias", "decision", ...}``;
        ``alias`` is ``champion`` or ``challenger``, ``decision`` the promotion decision
        (reason, difference, one-sided p-value, the compared champion version).
    """
    from clapcap import tracking
    from clapcap.tracking.promotion import register_on_evidence

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
                          params={"candidate": best["name"], "metric": metric}, dataset_dir=params.dataset_dir,
                          dump=dump):
        tracking.log_metrics({metric: best["val"]["corpus"][metric]}, scope="val")
        uri = tracking.log_loader_pyfunc_model(
            "captioner", "clapcap.captioning.serving:load_for_pyfunc", artifacts=artifacts, input_example=example)
        scores = caption_item_scores(best["test_predictions"], params.dataset_dir, metric)
        tracking.log_dict(scores, ITEM_SCORES_FILE)
        decision = register_on_evidence(
            uri, params.registered_model, item_scores=scores, artifact_file=ITEM_SCORES_FILE, alias=params.alias,
            compare=compare_with_champion)
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


def caption_item_scores(predictions_path: str | Path, dataset_dir: str | Path, metric: str) -> dict[str, Any]:
    """Per-clip test scores of one captioner (its saved test captions), in the item-scores
    format of :mod:`clapcap.retrieval.item_scores`: group ``captions``, items = the test clip
    ids in sorted order, primary ``captions/<metric>``.

    Raises:
        FileNotFoundError: when the captions file is missing (rerun the stage that wrote it).
        ValueError: when ``metric`` could not be computed (its assets are missing).
    """
    from clapcap.captioning.evaluate import score_predictions
    from clapcap.data.prepare import dataset_fingerprint
    from clapcap.retrieval.item_scores import FORMAT

    path = Path(predictions_path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: the candidate's test captions are missing; rerun its stage (dvc repro)")
    predictions = read_json(path)
    manifest = load_dataset(dataset_dir).manifest
    test = manifest[manifest["split"] == "test"]
    refs = {str(c): list(r) for c, r in zip(test["clip_id"], test["captions"], strict=True)}
    ids = sorted(refs)
    scored = score_predictions(predictions, refs, metrics=[metric])
    if metric not in scored["corpus"]:
        raise ValueError(f"{path}: {metric} unavailable ({scored['unavailable'].get(metric)}); "
                         "the champion comparison needs it")
    return {"format": FORMAT, "split": "test", "primary": f"captions/{metric}",
            "dataset": dataset_fingerprint(dataset_dir), "items": {"captions": ids},
            "scores": {"captions": {metric: [float(scored["per_clip"][c][metric]) for c in ids]}}}


def example_audio(dataset_dir: str | Path, n: int = 2) -> list[str]:
    """Paths of the first ``n`` test clips of the dataset (the registered model's input example)."""

    ds = load_dataset(dataset_dir)
    rows = ds.manifest[ds.manifest["split"] == "test"].head(n)
    return [str(resolve_audio_path(ds.root, p)) for p in rows["audio_path"]]


def load_champion(name: str = "captioner", alias: str = "champion") -> Any:
    """Load the registered champion as a pyfunc model (``predict(audio paths) -> captions``).

    Raises:
        RegistryError: when no ``name@alias`` is registered (saying how to build one).
    """
    from clapcap import tracking

    return tracking.load_pyfunc_model(f"models:/{name}@{alias}", build_hint=BUILD_HINT)
