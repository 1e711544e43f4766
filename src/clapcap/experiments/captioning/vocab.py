"""Vocabulary and length of the study's generated captions, beside the references' own.

DCASE's captioning tables report the vocabulary beside SPIDEr: a captioner that always says
the same few words can score well on n-gram metrics. For every test-caption file the study
saved (:func:`clapcap.experiments.captioning.scores.prediction_files`, plus ``extra`` files such as
the reference captioners') this step computes, on the same test clips:

- ``vocab``: the number of distinct words over all of the file's captions, with aac-metrics'
  own ``vocab`` function; ``vocab_ratio``: that over the references' full vocabulary
  (``vocab.ratio_full``); ``vocab_precision``: the share of the candidates' words that the
  references also use (``vocab.precision``);
- ``mean_words``: mean caption length in words;
- ``distinct_ratio``: distinct captions over clips (1.0: every clip gets its own caption).

Words: the caption lower-cased, split on anything but letters, digits and an inner
apostrophe (``re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower())``), so "Barks." and "barks"
are one word. The references' own row uses the same rule: ``vocab`` over every reference,
``vocab_single`` (aac-metrics' ``vocab.mrefs_avg``: one reference drawn per clip, seed 1234,
the vocabulary of one human-sized caption set), and ``mean_words``.

Per configuration (runs that differ only by their training seed): the mean and the sample
std over seeds, as :func:`~clapcap.experiments.captioning.scores.group_by_config` groups them.

SPIDEr-FL, the DCASE primary that pairs SPIDEr with a fluency-error detector, needs FENSE's
error-checker checkpoint, which does not install offline; it is not computed here (nor is
SPIDEr, whose SPICE half needs Stanford CoreNLP): docs/evaluation.md.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from clapcap.experiments.captioning.scores import group_by_config, prediction_files
from clapcap.utils.io import read_json, write_json

logger = logging.getLogger(__name__)

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
STATS = ("vocab", "vocab_ratio", "vocab_precision", "mean_words", "distinct_ratio")


def words(text: str) -> list[str]:
    """The words of a caption, by the module's rule."""
    return _WORD.findall(text.lower())


def caption_stats(predictions: Mapping[str, str], references: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """The module's statistics of ``{clip_id: caption}`` against ``{clip_id: [reference, ...]}``.

    Raises:
        ValueError: when a predicted clip has no references, or there is nothing to count.
    """
    from aac_metrics.functional import vocab

    missing = sorted(set(predictions) - set(references))
    if missing or not predictions:
        raise ValueError(f"caption_stats: {len(missing)} clip(s) without references, e.g. {missing[:5]}"
                         if missing else "caption_stats: no captions")
    ids = sorted(predictions)
    cands = [" ".join(words(predictions[c])) for c in ids]
    mrefs = [[" ".join(words(r)) for r in references[c]] for c in ids]
    glob, _ = vocab(cands, mrefs, return_all_scores=True)
    return {"vocab": int(glob["vocab.cands"]), "vocab_ratio": float(glob["vocab.ratio_full"]),
            "vocab_precision": float(glob["vocab.precision"]),
            "mean_words": float(np.mean([len(c.split()) for c in cands])),
            "distinct_ratio": len(set(cands)) / len(cands), "n_clips": len(cands)}


def reference_stats(references: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """The references' own row: full and single-reference vocabulary, mean length."""
    from aac_metrics.functional import vocab

    ids = sorted(references)
    mrefs = [[" ".join(words(r)) for r in references[c]] for c in ids]
    glob, _ = vocab([refs[0] for refs in mrefs], mrefs, return_all_scores=True)
    lengths = [len(r.split()) for refs in mrefs for r in refs]
    return {"vocab": int(glob["vocab.mrefs_full"]), "vocab_single": float(glob["vocab.mrefs_avg"]),
            "mean_words": float(np.mean(lengths)), "n_captions": len(lengths)}


def summarize(runs: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, Any]]:
    """Per configuration and statistic: mean and sample std (None for one seed) over seeds."""
    out = {}
    for config, by_seed in group_by_config(runs).items():
        seeds = sorted(by_seed)
        entry: dict[str, Any] = {"seeds": seeds, "n_seeds": len(seeds),
                                 "n_clips": sorted({int(by_seed[s]["n_clips"]) for s in seeds})}
        for stat in STATS:
            vals = np.array([by_seed[s][stat] for s in seeds], dtype=np.float64)
            entry[stat] = {"mean": float(vals.mean()), "std": float(vals.std(ddof=1)) if len(vals) > 1 else None}
        out[config] = entry
    return out


@dataclass
class CaptionVocabParams:
    """Sections ``caption_vocab`` and ``real_caption_vocab`` (the real corpus's study)."""

    captioning_dir: str = "results/captioning"
    dataset_dir: str = "data/corpus"
    extra: dict[str, str] = field(default_factory=dict)  # name -> {clip_id: caption} JSON
    out: str = "results/captioning/vocab.json"
    # MLflow (clapcap.tracked.caption_vocab.run_vocab): one run per configuration
    track: bool = True
    experiment: str = "clapcap-captioning"
    run_prefix: str = "captioning"  # the MLflow runs' names: <run_prefix>/<configuration>/vocab


def vocab_study(params: CaptionVocabParams) -> dict[str, Any]:
    """Count every saved test-caption file of the study (and ``extra``); write ``params.out``.

    Raises:
        ValueError: when a file's clips have no references in the dataset's test split.
    """
    from clapcap.data.prepare import load_dataset

    references = load_dataset(params.dataset_dir).references("test")
    files = {**prediction_files(params.captioning_dir), **params.extra}
    runs = {name: caption_stats(read_json(path), references) for name, path in sorted(files.items())}
    record = {"definition": "clapcap.experiments.captioning.vocab", "references": reference_stats(references),
              "runs": runs, "configs": summarize(runs)}
    write_json(params.out, record)
    logger.info("vocabulary and length of %d caption files -> %s", len(runs), params.out)
    return record
