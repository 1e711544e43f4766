"""Champion selection of the captioner: what :func:`clapcap.tracked.captioning_register.register_champion`
registers.

:func:`select_champion` picks, among every finished run and decoding configuration of
the study (:func:`candidates`), the one with the best primary metric on the VALIDATION split;
the tracked edge logs it as an MLflow pyfunc model and registers it as a new version of
``registered_model``. The alias
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

from clapcap.data.manifest import resolve_audio_path
from clapcap.data.prepare import load_dataset
from clapcap.utils.io import read_json
from clapcap.utils.skip import skip_reason

logger = logging.getLogger(__name__)

REGISTRATION_FILE = "registration.json"  # beside champion.json; git-ignored, not a DVC output

# How a store without a registered captioner gets one (the error of loading ``clapcap-captioner@champion``).
BUILD_HINT = ("Build and register one with `dvc repro caption_register` (it runs the captioning study first), "
              "or `clapcap captioning register` once the study's results exist.")


def candidates(out_dir: str | Path) -> list[dict[str, Any]]:
    """Every finished run (``results/*.json``) and decoding record (``decoding/<lm>/seed<k>/*.json``),
    but the music and subset runs, whose validation split is another set of clips."""
    out = Path(out_dir)
    found = []
    for path in sorted(out.glob("results/[!.]*.json")):
        if skip_reason(path) is not None:  # a music run on a dataset without music clips
            continue
        rec = read_json(path)
        if rec["spec"]["kind"] in ("music", "subset"):  # scored on a subset's val split: not comparable
            continue
        found.append({"name": path.stem, "checkpoint": rec["checkpoint"], "decoding": rec["decoding"],
                      "dump": rec["spec"]["dump"], "embedding_key": rec["spec"]["embedding_key"], "val": rec["val"],
                      "test": rec.get("test"), "test_predictions": str(out / "runs" / path.stem / "test_predictions.json")})
    for path in sorted(out.glob("decoding/*/seed*/[!.]*.json")):
        if path.name.endswith(".predictions.json"):
            continue
        rec = read_json(path)
        found.append({"name": f"{rec['lm']}_decoding_{rec['name']}_seed{rec['seed']}", "checkpoint": rec["checkpoint"],
                      "decoding": rec["decoding"], "dump": None, "embedding_key": None, "val": rec["val"],
                      "test": rec.get("test"), "test_predictions": str(path.with_suffix(".predictions.json"))})
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
    refs = load_dataset(dataset_dir).references("test")
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
