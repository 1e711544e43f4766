"""The ``robust_benchmark`` step: retrieval on original and paraphrased queries, zero-shot check.

For every model (an HF ``ClapModel`` folder) and every benchmark (a manifest caption
column: the original captions, view 1, view 2) of one split:

- t2a and a2t R@k (and mAP, MRR, median rank) with percentile bootstrap intervals
  (:mod:`clapcap.retrieval.metrics` / :mod:`clapcap.retrieval.bootstrap`); the dump of
  every (model, benchmark) is saved in the :mod:`clapcap.data.dump` format;
- the drop from original to paraphrased (paired over the aligned queries, with its CI);
- a paired bootstrap test of the candidate (RobustCLAP) against the base, per benchmark;
- zero-shot classification: ``label_prompt`` per class, classes ranked for each clip,
  ``map_norm_min@10`` (multi-label AP@10 divided by min(|labels|, 10); not the retrieval
  ``map@10``) and top-1 accuracy (top class among the clip's labels), with CIs and the
  paired change from the base.

Everything goes to ``out_dir/benchmark.json`` plus Markdown and LaTeX tables.
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clapcap.clap.features import iter_split_audio
from clapcap.compute import Compute, or_default
from clapcap.data.dump import EmbeddingDump, normalize, save_dump
from clapcap.data.prepare import load_dataset
from clapcap.encoders.base import EncoderConfig
from clapcap.encoders.factory import create_encoder
from clapcap.evaluation.conclusions import load_conclusions
from clapcap.experiments.robust.config import ZS, ZS_CUTOFF, ZS_MAP, RobustBenchParams
from clapcap.experiments.robust.report import write_tables
from clapcap.retrieval.bootstrap import bootstrap_ci, paired_bootstrap
from clapcap.retrieval.metrics import PerQuery, aggregate, per_query_dump
from clapcap.retrieval.ranking import average_precision_min_norm
from clapcap.retrieval.table import metric
from clapcap.robust.data import valid_text
from clapcap.utils.io import read_json, write_json

logger = logging.getLogger(__name__)


def queries(df: pd.DataFrame, column: str) -> tuple[np.ndarray, list[str], np.ndarray]:
    """The valid texts of ``column`` for each clip of ``df``.

    Returns:
        ``(clip_rows, texts, caption_clip_index)``: the rows of ``df`` that have at least one
        valid text, the texts, and for each text its position in ``clip_rows``.

    Raises:
        ValueError: when ``column`` is missing or no clip has a valid text.
    """
    if column not in df.columns:
        raise ValueError(f"benchmark column {column!r} not in the manifest; found {list(df.columns)}")
    rows, texts, index = [], [], []
    for r, values in enumerate(df[column]):
        good = [t for t in (values or []) if valid_text(t)]
        if good:
            texts += good
            index += [len(rows)] * len(good)
            rows.append(r)
    if not texts:
        raise ValueError(f"column {column!r} has no valid text in this split")
    if len(rows) < len(df):
        logger.warning("%s: %d of %d clips have no valid text; they are left out", column, len(df) - len(rows), len(df))
    return np.asarray(rows), texts, np.asarray(index, dtype=np.int64)


def zero_shot(audio: np.ndarray, label_embeds: np.ndarray, positives: np.ndarray) -> dict[str, np.ndarray]:
    """Per-clip zero-shot scores: ``map_norm_min@10`` and ``accuracy`` (top class is a true label).

    ``map_norm_min@10`` is AP@10 divided by min(|labels|, 10), ties pessimistic
    (:func:`clapcap.retrieval.ranking.average_precision_min_norm`); it is not the retrieval
    ``map@10``, which divides by every positive. ``accuracy`` takes ``argmax``'s top class:
    among tied top scores, the first class in sorted class order.
    """

    scores = (normalize(audio) @ normalize(label_embeds).T).astype(np.float32)  # (N, C)
    top = np.argmax(scores, axis=1)
    return {ZS_MAP: average_precision_min_norm(scores, positives, ZS_CUTOFF),
            "accuracy": positives[np.arange(len(top)), top].astype(np.float64)}


def _labels(df: pd.DataFrame, column: str) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Rows with labels, the sorted class list, and the bool (rows, classes) label matrix."""
    if column not in df.columns:
        raise ValueError(f"label column {column!r} not in the manifest")
    rows = np.asarray([i for i, v in enumerate(df[column]) if isinstance(v, list) and v])
    classes = sorted({lab for i in rows for lab in df[column].iat[i]})
    pos = np.zeros((len(rows), len(classes)), dtype=bool)
    for r, i in enumerate(rows):
        for lab in df[column].iat[i]:
            pos[r, classes.index(lab)] = True
    return rows, classes, pos


def load_waves(dataset_dir: str, split: str, sample_rate: int) -> tuple[list[np.ndarray], list[str]]:

    waves, ids = [], []
    for row, wave in iter_split_audio(dataset_dir, split, sample_rate, progress=False):
        waves.append(wave)
        ids.append(str(row["clip_id"]))
    return waves, ids


def evaluate_model(name: str, model_dir: str, df: pd.DataFrame, waves: list[np.ndarray],
                   params: RobustBenchParams, *,
                   compute: Compute | None = None) -> tuple[dict[str, PerQuery], dict[str, Any]]:
    """Embed ``df``'s clips and every benchmark's texts with one model on ``compute.device``.

    Returns:
        ``(per_query, summary)``: per benchmark (and ``zero_shot``) the per-query metrics,
        and per benchmark the aggregated metrics with bootstrap intervals (``ci``).
    """

    cfg = EncoderConfig(name=name, checkpoint=model_dir, batch_size=params.batch_size,
                        revision=params.revisions.get(model_dir, ""))
    enc = create_encoder(cfg.with_device(or_default(compute).device))
    audio = enc.embed_audio(waves)
    pqs: dict[str, PerQuery] = {}
    summary: dict[str, Any] = {}
    for bench, column in params.benchmarks.items():
        rows, texts, index = queries(df, column)
        dump = EmbeddingDump(audio[rows], enc.embed_text(texts), index, [df["clip_id"].iat[r] for r in rows],
                             texts, meta={"model": model_dir, "benchmark": bench, "column": column,
                                          "split": params.split, **enc.describe()})
        save_dump(dump, Path(params.out_dir) / "dumps" / f"{name}__{bench}.npz")
        pqs[bench] = per_query_dump(dump, ks=params.ks, origin=f"{name}/{bench}")
        summary[bench] = _with_ci(pqs[bench], params)
        summary[bench].update(n_clips=dump.n_clips, n_queries=dump.n_captions)
    rows, classes, positives = _labels(df, params.label_column)
    prompts = [params.label_prompt.format(label=c) for c in classes]
    pqs[ZS] = {"a2l": zero_shot(audio[rows], enc.embed_text(prompts), positives)}
    summary[ZS] = {**_with_ci(pqs[ZS], params)["a2l"], "n_clips": int(len(rows)), "classes": classes}
    return pqs, summary


def _with_ci(pq: PerQuery, params: RobustBenchParams) -> dict[str, Any]:
    agg = aggregate(pq)  # the metric table's aggregate of each key (zero-shot scores included)
    ci = bootstrap_ci(pq, n_resamples=params.n_resamples, seed=params.seed, confidence=params.confidence)
    return {d: {**agg[d], "ci": ci[d]} for d in pq}


def _same_queries(a: PerQuery, b: PerQuery) -> bool:
    return all(len(next(iter(a[d].values()))) == len(next(iter(b[d].values()))) for d in a)


def drops(pqs: dict[str, PerQuery], params: RobustBenchParams) -> dict[str, Any]:
    """Paraphrased minus original, per benchmark, paired over aligned queries (when aligned)."""
    out = {}
    base = pqs["original"]
    for bench in params.benchmarks:
        if bench == "original":
            continue
        if not _same_queries(pqs[bench], base):
            logger.warning("%s: queries not aligned with the original (failed paraphrases); drop has no CI", bench)
            out[bench] = {d: {m: {"difference": float(np.mean(pqs[bench][d][m]) - np.mean(base[d][m]))}
                              for m in base[d] if metric(m).aggregate == "mean"} for d in base}
            continue
        out[bench] = paired_bootstrap(pqs[bench], base, n_resamples=params.n_resamples, seed=params.seed,
                                      confidence=params.confidence)
    return out


def should_register(paired: dict[str, Any], params: RobustBenchParams) -> tuple[bool, str]:
    """Does the candidate beat the base on ``register_metric`` of ``register_benchmark``
    (p < alpha) without a significant loss on the original captions?

    Returns:
        ``(decision, reason)``.
    """
    direction, metric = params.register_metric.split("/")
    win = paired[params.register_benchmark][direction][metric]
    orig = paired["original"][direction][metric]
    if not (win["difference"] > 0 and win["p_value"] < params.alpha):
        return False, (f"{params.register_benchmark} {params.register_metric} change {win['difference']:+.4f} "
                       f"(p={win['p_value']:.3g}) is not a significant gain")
    if orig["difference"] < 0 and orig["p_value"] < params.alpha:
        return False, f"original {params.register_metric} drops significantly ({orig['difference']:+.4f})"
    return True, (f"{params.register_benchmark} {params.register_metric} {win['difference']:+.4f} "
                  f"(p={win['p_value']:.3g}); original {orig['difference']:+.4f} (p={orig['p_value']:.3g})")


def _verdict_text(f: dict[str, Any]) -> str:
    return (f"{f['id']} {f['verdict']} over {f['n_seeds']['a']} seeds ({f['effect']:+.4f} "
            f"[{f['ci']['low']:+.4f}, {f['ci']['high']:+.4f}])")


def should_register_on_verdicts(findings: dict[str, dict[str, Any]], params: RobustBenchParams) -> tuple[bool, str]:
    """The registration decision on the seed study's verdicts: ``register_finding`` holds and
    no ``register_guards`` finding is reversed (docs/conclusions.md).

    Returns:
        ``(decision, reason)``.

    Raises:
        ValueError: when a named finding is not in the conclusions file.
    """
    wanted = [params.register_finding, *params.register_guards]
    missing = [fid for fid in wanted if fid not in findings]
    if missing:
        raise ValueError(f"{params.register_on}: no finding {missing}; have {sorted(findings)}")
    win = findings[params.register_finding]
    if win["verdict"] != "holds":
        return False, f"{_verdict_text(win)}: the gain does not hold over seeds"
    broken = [findings[g] for g in params.register_guards if findings[g]["verdict"] == "reversed"]
    if broken:
        return False, f"{_verdict_text(win)}, but " + "; ".join(_verdict_text(f) for f in broken) + " (reversed)"
    guards = "; ".join(_verdict_text(findings[g]) for g in params.register_guards)
    return True, f"{_verdict_text(win)}; {guards}"


def _decide(paired: dict[str, Any], params: RobustBenchParams) -> dict[str, Any]:
    if params.register_on:
        decision, reason = should_register_on_verdicts(load_conclusions(params.register_on), params)
        return {"decision": decision, "reason": reason, "basis": f"verdicts over fine-tune seeds ({params.register_on})"}
    decision, reason = should_register(paired, params)
    return {"decision": decision, "reason": reason, "basis": "paired bootstrap of this fine-tune"}


def check_models(models: dict[str, str]) -> None:
    """Raise ``FileNotFoundError`` naming the first model folder of ``models`` that is missing."""
    for name, path in models.items():
        if not Path(path).exists():
            raise FileNotFoundError(f"{path}: model folder of {name!r} not found")


def run_benchmark(params: RobustBenchParams, *, compute: Compute | None = None) -> dict[str, Any]:
    """Benchmark every model of ``params.models`` (embedding on ``compute.device``); write
    JSON, Markdown and LaTeX tables.

    Returns:
        The result dict (also ``out_dir/benchmark.json``): ``models`` (per model and
        benchmark: metrics with ``ci``; ``zero_shot``), ``drops`` (per model), ``paired``
        (candidate vs base per benchmark, incl. ``zero_shot``), ``register`` decision.

    Raises:
        FileNotFoundError: when a model folder or the manifest is missing.
        ValueError: when ``base``/``candidate`` are not in ``models`` or a column is missing.
    """
    compute = or_default(compute)  # resolved first: a missing CUDA fails before any work
    for key in (params.base, params.candidate):
        if key not in params.models:
            raise ValueError(f"robust_benchmark: {key!r} is not one of models {list(params.models)}")
    if "original" not in params.benchmarks:
        raise ValueError("robust_benchmark.benchmarks needs an 'original' entry (the drop is measured from it)")
    check_models(params.models)
    df = load_dataset(params.paraphrase_dir).split(params.split)
    waves, ids = load_waves(params.paraphrase_dir, params.split, sample_rate_of(params))
    assert ids == list(df["clip_id"]), "audio order must follow the manifest"
    pqs, result = {}, {"split": params.split, "params": asdict(params), "models": {}, "drops": {}}
    for name, path in params.models.items():
        logger.info("benchmarking %s (%s) on %d %s clips", name, path, len(df), params.split)
        pqs[name], result["models"][name] = evaluate_model(name, path, df, waves, params, compute=compute)
        result["drops"][name] = drops(pqs[name], params)
    result["paired"] = {bench: paired_bootstrap(pqs[params.candidate][bench], pqs[params.base][bench],
                                                n_resamples=params.n_resamples, seed=params.seed,
                                                confidence=params.confidence)
                        for bench in [*params.benchmarks, ZS]}
    result["register"] = _decide(result["paired"], params)
    write_json(Path(params.out_dir) / "benchmark.json", result)
    write_tables(result, params, Path(params.out_dir))
    logger.info("%s vs %s: register=%s (%s)", params.candidate, params.base, result["register"]["decision"],
                result["register"]["reason"])
    return result


def sample_rate_of(params: RobustBenchParams) -> int:

    rates = set()
    for path in params.models.values():
        pre = Path(path) / "preprocessor_config.json"
        rates.add(int(read_json(pre)["sampling_rate"]) if pre.is_file() else 48000)
    if len(rates) != 1:
        raise ValueError(f"models expect different sample rates {sorted(rates)}; benchmark them separately")
    return rates.pop()


def candidate_item_scores(params: RobustBenchParams) -> dict[str, Any]:
    """The candidate's per-query scores on ``register_benchmark`` (view 2 by default), from the
    dump the benchmark saved: what a registered RobustCLAP version carries, so two versions
    compare paired on the same paraphrased queries."""
    from clapcap.data.dump import load_dump
    from clapcap.data.prepare import dataset_fingerprint
    from clapcap.retrieval.item_scores import retrieval_item_scores

    dump = load_dump(Path(params.out_dir) / "dumps" / f"{params.candidate}__{params.register_benchmark}.npz")
    return retrieval_item_scores(dump.audio_embeds, dump.text_embeds, dump.caption_clip_index,
                                 clip_ids=dump.clip_ids, split=f"{params.split}/{params.register_benchmark}",
                                 dataset=dataset_fingerprint(params.paraphrase_dir), primary=params.register_metric)
