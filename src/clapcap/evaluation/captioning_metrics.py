"""Captioning scores from aac-metrics itself, with explicit asset checks and clear input errors.

:func:`score_captions` scores ``{clip_id: caption}`` predictions against
``{clip_id: [reference, ...]}`` with aac-metrics' own metric functions and metric names:

==============  ==========================================  =======================
name            metric                                      needs
==============  ==========================================  =======================
``bleu_1``      BLEU-1                                      pure Python
``bleu_4``      BLEU-4                                      pure Python
``bleu_2``      BLEU-2 (on request: ``EXTRA_METRICS``)      pure Python
``bleu_3``      BLEU-3 (on request)                         pure Python
``meteor``      METEOR 1.5                                  Java + METEOR jar
``rouge_l``     ROUGE-L                                     pure Python
``cider_d``     CIDEr-D                                     pure Python
``spice``       SPICE                                       Java + CoreNLP 3.6.0
``spider``      SPIDEr = (CIDEr-D + SPICE) / 2              as SPICE
``sbert_sim``   SBERT cosine (paraphrase-TinyBERT-L6-v2)    HF cache
``fer``         fluency error rate (FENSE error checker)    checkpoint + HF cache
``fense``       FENSE = SBERT-sim with fluency penalty      SBERT + FER
``spider_fl``   SPIDEr-FL = SPIDEr with fluency penalty     SPICE + FER (on request)
==============  ==========================================  =======================

``EXTRA_METRICS`` are computed only when asked for by name (the DCASE table asks for them);
the default set, ``ALL_METRICS``, is what every study stage scores.

All sentences go through aac-metrics' PTB tokenizer in ONE Java launch (candidates and
references together), then the metrics run with ``preprocess=False``. METEOR runs on the
interpreter's one persistent METEOR process (:mod:`clapcap.evaluation.meteor_jvm`, aac-metrics'
own protocol and values), so only the first call pays the JVM start. A metric whose assets are missing is listed under ``"unavailable"`` with the
reason; it is never replaced by a different model. The primary metric is FENSE where
available, else the named fallback ``cider_d``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from clapcap.errors import AssetError
from clapcap.evaluation import meteor_jvm
from clapcap.evaluation.aac_assets import AacEnv, metric_problems, setup_offline, tokenizer_problem
from clapcap.evaluation.text import postprocess
from clapcap.utils.io import read_json, write_json

logger = logging.getLogger(__name__)

ALL_METRICS = ["bleu_1", "bleu_4", "meteor", "rouge_l", "cider_d", "spice", "spider",
               "sbert_sim", "fer", "fense"]
EXTRA_METRICS = ["bleu_2", "bleu_3", "spider_fl"]
PURE_PYTHON_METRICS = ["bleu_1", "bleu_4", "rouge_l", "cider_d"]
PRIMARY = "fense"
FALLBACK_PRIMARY = "cider_d"
_MAX_IDS_SHOWN = 10


def _show_ids(ids: list[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:_MAX_IDS_SHOWN])
    more = len(ids) - _MAX_IDS_SHOWN
    return shown + (f" ... ({more} more)" if more > 0 else "")


def _check_types(predictions: Any, references: Any) -> list[str]:
    errors = []
    if not isinstance(predictions, dict):
        return [f"predictions: expected dict[str, str], found {type(predictions).__name__}"]
    if not isinstance(references, dict):
        return [f"references: expected dict[str, list[str]], found {type(references).__name__}"]
    for cid, cap in predictions.items():
        if not isinstance(cap, str):
            errors.append(f"predictions[{cid!r}]: expected str, found {type(cap).__name__}")
    for cid, refs in references.items():
        if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
            found = type(refs).__name__ if not isinstance(refs, list) else "list with non-str items"
            errors.append(f"references[{cid!r}]: expected list[str], found {found}")
        elif not refs or any(not r.strip() for r in refs):
            errors.append(f"references[{cid!r}]: expected non-empty reference captions, found {refs!r}")
    return errors


def check_caption_inputs(predictions: Any, references: Any) -> list[str]:
    """Validate predictions against references.

    Returns:
        The clip ids to score, in the references' order.

    Raises:
        ValueError: listing every problem: wrong types ("expected dict[str, str], found
            list"), ids missing from the predictions, extra ids, empty captions.
    """
    errors = _check_types(predictions, references)
    if errors:
        raise ValueError("invalid captioning inputs:\n  " + "\n  ".join(errors[:20]))
    missing = [cid for cid in references if cid not in predictions]
    extra = [cid for cid in predictions if cid not in references]
    empty = [cid for cid, cap in predictions.items() if cid in references and not cap.strip()]
    if missing:
        errors.append(f"{len(missing)} id(s) in references have no prediction: {_show_ids(missing)}")
    if extra:
        errors.append(f"{len(extra)} predicted id(s) are not in references: {_show_ids(extra)}")
    if empty:
        errors.append(f"{len(empty)} empty prediction(s): {_show_ids(empty)}")
    if not references and not errors:
        errors.append("no clips to score: references are empty")
    if errors:
        raise ValueError("predictions do not match references:\n  " + "\n  ".join(errors))
    return list(references)


def _aac_calls(available: list[str]) -> list[str]:
    """The fewest aac-metrics functions that produce ``available`` (composites first)."""
    calls = [m for m in ("bleu_1", "bleu_2", "bleu_3", "bleu_4", "meteor", "rouge_l") if m in available]
    if "spider_fl" in available:  # aac-metrics' spider_fl also returns spider, cider_d, spice and fer
        calls.append("spider_fl")
    elif "spider" in available or ("spice" in available and "cider_d" in available):
        calls.append("spider")
    else:
        calls += [m for m in ("cider_d", "spice") if m in available]
    if "fense" in available or ("sbert_sim" in available and "fer" in available):
        calls.append("fense")
    else:
        calls += [m for m in ("sbert_sim", "fer") if m in available]
    return calls


def _tokenize(cands: list[str], mrefs: list[list[str]], env: AacEnv) -> tuple[list[str], list[list[str]]]:
    """PTB-tokenize candidates and references in one Java launch."""
    from aac_metrics.utils.tokenization import preprocess_mono_sents

    problem = tokenizer_problem(env)
    if problem is not None:
        raise AssetError(f"cannot tokenize captions: {problem}")
    flat = cands + [r for refs in mrefs for r in refs]
    tok = preprocess_mono_sents(flat, cache_path=str(env.cache_path), java_path=env.java_path)
    out_refs, pos = [], len(cands)
    for refs in mrefs:
        out_refs.append(tok[pos: pos + len(refs)])
        pos += len(refs)
    return tok[: len(cands)], out_refs


def _choose_primary(available: list[str]) -> tuple[str | None, str | None]:
    if PRIMARY in available:
        return PRIMARY, None
    if FALLBACK_PRIMARY in available:
        return FALLBACK_PRIMARY, f"{PRIMARY} unavailable; named fallback primary {FALLBACK_PRIMARY}"
    first = available[0] if available else None
    return first, f"{PRIMARY} and {FALLBACK_PRIMARY} unavailable; primary is {first}"


def _resolve_metrics(metrics: list[str] | None) -> list[str]:
    metrics = list(ALL_METRICS if metrics is None else metrics)
    unknown = [m for m in metrics if m not in ALL_METRICS + EXTRA_METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; expected aac-metrics names from {ALL_METRICS + EXTRA_METRICS}")
    if not metrics:
        raise ValueError(f"no metrics requested; expected a non-empty subset of {ALL_METRICS}")
    return metrics


def score_captions(
    predictions: dict[str, str],
    references: dict[str, list[str]],
    *,
    metrics: list[str] | None = None,
    trim_sentences: bool = False,
    trim_words: int | None = None,
    tokenize: bool = True,
    env: AacEnv | None = None,
    device: str = "cuda_if_available",
) -> dict[str, Any]:
    """Score captions with aac-metrics.

    ``trim_sentences`` cuts predictions AND references after their last complete sentence
    (same post-processing on both sides); ``trim_words`` keeps the first N words of each
    prediction only. ``tokenize=False`` skips the PTB tokenizer (inputs already tokenized).

    Returns:
        ``{"corpus": {metric: float}, "per_clip": {clip_id: {metric: float}},
        "unavailable": {metric: reason}, "primary": name, "primary_note": str | None,
        "n_clips": int, "settings": {...}}`` (no wall-clock time: results are byte-stable).

    Raises:
        ValueError: on mismatched or malformed inputs (naming the ids) or unknown metrics.
        AssetError: when the PTB tokenizer is needed but cannot run.
    """
    metrics = _resolve_metrics(metrics)
    ids = check_caption_inputs(predictions, references)
    if trim_words is not None and (isinstance(trim_words, bool) or not isinstance(trim_words, int) or trim_words < 1):
        raise ValueError(f"trim_words: expected an int >= 1 or None, found {trim_words!r}")
    cands = [postprocess(predictions[c], trim_sentences=trim_sentences, trim_words=trim_words) for c in ids]
    mrefs = [[postprocess(r, trim_sentences=trim_sentences) for r in references[c]] for c in ids]
    env = env if env is not None else setup_offline()
    unavailable = metric_problems(metrics, env)
    available = [m for m in metrics if m not in unavailable]
    for name, reason in unavailable.items():
        logger.warning("metric %s unavailable: %s", name, reason)
    corpus, sents = _run_aac(cands, mrefs, available, env, tokenize=tokenize, device=device)
    primary, note = _choose_primary(available)
    per_clip = {cid: {m: float(sents[m][i]) for m in available} for i, cid in enumerate(ids)}
    return {
        "corpus": {m: float(corpus[m]) for m in available},
        "per_clip": per_clip,
        "unavailable": unavailable,
        "primary": primary,
        "primary_note": note,
        "n_clips": len(ids),
        "settings": {"metrics": metrics, "trim_sentences": trim_sentences, "trim_words": trim_words,
                     "tokenizer": "ptb" if tokenize else "none"},
    }


def _run_aac(cands: list[str], mrefs: list[list[str]], available: list[str], env: AacEnv,
             *, tokenize: bool, device: str) -> tuple[dict, dict]:
    """Tokenize once, then run the fewest aac-metrics calls. Returns (corpus, sentence) dicts."""
    if not available:
        return {}, {}
    from aac_metrics.functional.evaluate import evaluate

    if tokenize:
        cands, mrefs = _tokenize(cands, mrefs, env)
    calls = _aac_calls(available)
    logger.info("scoring %d captions with aac-metrics %s", len(cands), calls)
    # METEOR runs on this process's one METEOR JVM (meteor_jvm: aac-metrics' own protocol and
    # values, without a Java start and paraphrase-table load per call); the rest in aac-metrics.
    rest = [m for m in calls if m != "meteor"]
    corpus, sents = {}, {}
    if rest:
        corpus, sents = evaluate(cands, mrefs, preprocess=False, metrics=rest,
                                 cache_path=str(env.cache_path), java_path=env.java_path, device=device)
        corpus, sents = dict(corpus), dict(sents)
    if "meteor" in calls:
        corpus["meteor"], sents["meteor"] = meteor_jvm.meteor(cands, mrefs, env)
    return corpus, sents


def score_files(predictions_path: str | Path, references_path: str | Path, out_path: str | Path,
                **kwargs: Any) -> dict[str, Any]:
    """Score ``{clip_id: caption}`` JSON against ``{clip_id: [refs]}`` JSON; write the result.

    ``kwargs`` go to :func:`score_captions`.

    Returns:
        The result dict, also written atomically to ``out_path`` as JSON.

    Raises:
        FileNotFoundError / ValueError: naming the file on a missing file, bad JSON or
            mismatched inputs.
    """
    preds, refs = read_json(predictions_path), read_json(references_path)
    try:
        result = score_captions(preds, refs, **kwargs)
    except ValueError as err:
        raise ValueError(f"{predictions_path} vs {references_path}: {err}") from err
    result["inputs"] = {"predictions": str(predictions_path), "references": str(references_path)}
    write_json(out_path, result)
    return result
