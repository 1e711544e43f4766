"""``sbert_sim_minilm`` for every captioner of the study, from the test captions each run saved.

The captioning stages keep each run's test captions (``runs/<name>/test_predictions.json``)
and each decoding config's (``decoding/<lm>/seed<k>/<name>.predictions.json``). This step
scores them all with one load of the sentence model, so the semantic metric joins every
captioning table without retraining or re-decoding anything.

Per run: the corpus score and a 95% percentile bootstrap CI over test clips (1,000
resamples, seed 0). Per configuration (runs that differ only by their ``_seed<k>`` suffix,
or decoding records that differ only by their ``seed<k>`` folder): the mean and the sample
std over training seeds, the noise floor of this metric for that configuration.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.evaluation.sbert import METRIC, CachedSentenceModel, load_minilm, score_predictions
from clapcap.utils.io import read_json, write_json

logger = logging.getLogger(__name__)

_SEED = re.compile(r"^(?P<config>.+)_seed(?P<seed>\d+)$")


@dataclass
class CaptionScoreParams:
    """Section ``caption_sbert``: where the study's captions are and where the scores go."""

    captioning_dir: str = "results/captioning"
    dataset_dir: str = "data/corpus"
    out: str = "results/captioning/sbert_sim_minilm.json"
    n_resamples: int = 1000
    seed: int = 0
    progress: bool = True


def mean_interval(values: np.ndarray, *, n_resamples: int, seed: int, confidence: float = 0.95) -> list[float]:
    """Percentile bootstrap interval of the mean of ``values`` (resampling items with replacement)."""
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(n_resamples, len(values)))].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    return [float(np.percentile(means, tail)), float(np.percentile(means, 100 - tail))]


def prediction_files(captioning_dir: str | Path) -> dict[str, Path]:
    """``{record name: predictions file}``: ``<run>`` for training runs, ``decoding/<lm>/seed<k>/<name>``."""
    root = Path(captioning_dir)
    files = {p.parent.name: p for p in sorted(root.glob("runs/*/test_predictions.json"))}
    for p in sorted(root.glob("decoding/*/seed*/[!.]*.predictions.json")):
        files[str(p.relative_to(root).with_suffix("").with_suffix("").as_posix())] = p
    return files


def config_of(name: str) -> tuple[str, int] | None:
    """``(configuration, training seed)`` of a record name, or None when it names no seed."""
    if name.startswith("decoding/"):
        _, lm, seed_dir, config = name.split("/")
        return f"decoding/{lm}/{config}", int(seed_dir.removeprefix("seed"))
    m = _SEED.match(name)
    return (m["config"], int(m["seed"])) if m else None


def group_by_config(runs: dict[str, Any]) -> dict[str, dict[int, Any]]:
    """``{configuration: {seed: record}}`` of the records whose name carries a seed (:func:`config_of`),
    configurations sorted."""
    groups: dict[str, dict[int, Any]] = {}
    for name, rec in runs.items():
        key = config_of(name)
        if key is not None:
            groups.setdefault(key[0], {})[key[1]] = rec
    return dict(sorted(groups.items()))


def summarize_configs(runs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Mean and sample std (ddof=1; None for one seed) of the corpus score over each configuration's seeds."""
    out = {}
    for config, by_seed in group_by_config(runs).items():
        vals = np.array([by_seed[s]["corpus"] for s in sorted(by_seed)])
        out[config] = {"mean": float(vals.mean()), "std": float(vals.std(ddof=1)) if len(vals) > 1 else None,
                       "seeds": sorted(by_seed), "n_seeds": len(vals)}
    return out


def score_study(params: CaptionScoreParams) -> dict[str, Any]:
    """Score every saved test-caption file of the study; write and return ``params.out``.

    Raises:
        InputError: when a file's clips have no references in the dataset's test split.
        AssetError: when the sentence model is not installed.
    """
    from tqdm.auto import tqdm

    from clapcap.data.prepare import load_dataset

    references = load_dataset(params.dataset_dir).references("test")
    files = prediction_files(params.captioning_dir)
    model = CachedSentenceModel(load_minilm())  # the shared references are embedded once
    runs = {}
    for name, path in tqdm(files.items(), desc=METRIC, disable=not params.progress):
        scored = score_predictions(read_json(path), references, model=model)
        items = np.array(list(scored["items"].values()))
        runs[name] = {"corpus": scored["corpus"], "n": scored["n"],
                      "ci95": mean_interval(items, n_resamples=params.n_resamples, seed=params.seed)}
    record = {"metric": METRIC, "definition": "docs/captioning.md#sbert_sim_minilm",
              "runs": runs, "configs": summarize_configs(runs)}
    write_json(params.out, record)
    logger.info("%s: scored %d prediction files -> %s", METRIC, len(runs), params.out)
    return record
