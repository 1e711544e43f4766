"""Collect the pipeline's result files into the report's input schema (docs/reports.md).

Each adapter reads result files in the format the producing step writes and returns
report rows; :func:`collect_inputs` writes one JSON per report section under ``out_dir``
and returns the ``{section: [paths]}`` mapping that :func:`build_report` takes. A source
file that does not exist yet is skipped (its section then reads "not run").
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clapcap.evaluation.conclusions import merge_conclusions
from clapcap.reporting.real_corpus import collect_real_corpus
from clapcap.reporting.report import build_report
from clapcap.retrieval.table import LEADERBOARD, metric
from clapcap.utils.io import read_json, write_json
from clapcap.utils.skip import skip_reason

logger = logging.getLogger(__name__)

# aac-metrics names -> readable report columns.
CAPTION_METRICS = {"bleu_1": "BLEU-1", "bleu_4": "BLEU-4", "meteor": "METEOR", "rouge_l": "ROUGE-L",
                   "cider_d": "CIDEr-D", "spice": "SPICE", "spider": "SPIDEr", "fense": "FENSE",
                   # not FENSE, not the official SBERT-sim: all-MiniLM-L6-v2 (docs/captioning.md)
                   "sbert_sim_minilm": "sbert_sim_minilm"}
SEMANTIC_FILE = "sbert_sim_minilm.json"  # clapcap.experiments.captioning.scores


@dataclass
class CollectParams:
    """``params.yaml`` section ``report_inputs``."""

    out_dir: str = "reports/inputs"
    retrieval_metrics: dict[str, str] = field(default_factory=dict)  # row name -> evaluate JSON
    retrieval_dataset: str = "synthetic"
    reference_scores: list[str] = field(default_factory=list)  # reference_score scores.json files
    decoding_lm: str = "gpt2"
    baseline_decoding: str = "greedy"
    lr_search: list[str] = field(default_factory=list)  # Optuna result JSONs (docs/reports.md)
    lr_search_figures: dict[str, str] = field(default_factory=dict)  # name -> PNG made by the search
    llm_views: str = ""  # a robust_paraphrase_llm output folder (paraphrase_report.json, view_records.json)
    pairwise: str = ""   # the pairwise study's output folder (agreement.json, preference.png)
    real: str = ""       # the real benchmark's results folder (benchmark.json, captioning/scores.json)
    real_dataset: str = ""  # its prepared dataset (dataset.json)
    vocab: str = ""      # caption_vocab's output (vocabulary and length of generated captions)
    kinds: str = ""      # robust_kinds' kinds.json (which words hurt retrieval)
    views: str = ""      # robust_views' views.json (one view per caption against two)
    view_source: str = ""  # robust_view_source's view_source.json (trained on the LLM's views)
    lr_check: str = ""   # caption_lr_check's folder (<row>/check.json: each row's own LR search)
    # The real corpus (clapcap.reporting.real_corpus): the tower CLAP's metrics.json, RobustCLAP's
    # summary.json and the captioning study's folder (results/, references/scores.json).
    real_clap: str = ""
    real_robust: str = ""
    real_captioning: str = ""


def _caption_metrics(corpus: dict[str, Any]) -> dict[str, float]:
    return {label: float(corpus[key]) for key, label in CAPTION_METRICS.items()
            if isinstance(corpus.get(key), (int, float))}


def retrieval_rows(files: dict[str, str], dataset: str) -> list[dict[str, Any]]:
    """Rows for the leaderboard section from ``clapcap retrieval evaluate`` outputs."""
    rows = []
    for name, path in files.items():
        if not Path(path).is_file():
            logger.warning("retrieval metrics %s missing; row %s skipped", path, name)
            continue
        data = read_json(path)
        t2a = data["t2a"]
        rows.append({"name": name, "dataset": dataset, "unit": "fraction",
                     "metrics": {metric(k).label: t2a[k] for k in LEADERBOARD}})
    return rows


def reference_rows(score_files: list[str]) -> list[dict[str, Any]]:
    """Reference-captioner rows; a leaky model also gets its held-out row (not leaky)."""
    rows = []
    for path in score_files:
        if not Path(path).is_file():
            logger.warning("reference scores %s missing; skipped", path)
            continue
        data = read_json(path)
        leaky = data.get("leakage", {}).get("verdict") == "leaky"
        rows.append({"name": data["name"], "pipeline": False, "leaky": leaky,
                     "metrics": _caption_metrics(data["corpus"])})
        held = data.get("held_out_row")
        if leaky and held:
            rows.append({"name": held.get("name") or f"{data['name']} (held-out)", "pipeline": False,
                         "leaky": False, "metrics": _caption_metrics(held["corpus"])})
    return rows


def _test_metrics(path: Path, semantic: dict[str, Any] | None = None, key: str = "") -> dict[str, float]:
    """A result file's test metrics, plus its ``sbert_sim_minilm`` from ``semantic`` (the study's
    ``sbert_sim_minilm.json`` runs, by record name ``key``; default: the file's stem)."""
    corpus = dict(read_json(path)["test"]["corpus"])
    run = (semantic or {}).get(key or path.stem)
    if run is not None:
        corpus["sbert_sim_minilm"] = run["corpus"]
    return _caption_metrics(corpus)


def _encoder_rows(res: Path, sem: dict[str, Any], kind: str, lm: str, baseline: str) -> list[dict[str, Any]]:
    """One row per encoder of an encoder study (``<kind>_<encoder>_<lm>_s1_seed<k>.json``, its
    seeds grouped; skip markers left out); ``music`` rows form their own group (another test
    set: the music clips)."""
    by_encoder: dict[str, list[dict[str, float]]] = {}
    for path in sorted(res.glob(f"{kind}_*_{lm}_s1_seed*.json")):
        if skip_reason(path) is not None:  # the study does not apply to this dataset
            continue
        name = path.stem[len(kind) + 1:].split(f"_{lm}_s1")[0]
        by_encoder.setdefault(name, []).append(_test_metrics(path, sem))
    group, suffix = (lm, "") if kind == "encoder" else (f"{lm}, music clips", " (music)")
    return [{"name": f"{name}{suffix}", "baseline": name == baseline, "group": group, "seeds": seeds}
            for name, seeds in by_encoder.items()]


def captioning_sections(root: str | Path, lms: list[str], decoding_lm: str,
                        baseline_decoding: str, decoding_seed: int = 0,
                        music_baseline: str = "synth_clap") -> dict[str, list[dict[str, Any]]]:
    """Report rows per captioning section from the study's result files (test split).

    - ``lm_ablation``: one row per LM with its seeds (``<lm>_seed<k>.json``), then the
      most-common-caption baseline (``baseline_trivial.json``) that every LM must beat;
    - ``arch_ablation``: per LM, the seed-0 baseline plus ``<lm>_<variant>_seed0.json``;
    - ``decoding_ablation``: ``decoding/<lm>/seed<decoding_seed>/<name>.json`` (the checkpoint
      of the first noise seed), baseline ``baseline_decoding``;
    - ``encoder_ablation``: ``encoder_<name>_<lm>_s1_seed<k>.json`` (mean over seeds),
      baseline ``default``, and the music study's ``music_<name>_<lm>_s1_seed<k>.json`` (the
      reduced study's encoder ablation, on the music clips), baseline ``music_baseline``
      (``captioning.music.baseline``), in a group of their own;
    - ``pipeline``: seed-0 baselines and the most-common-caption baseline, for the
      reference comparison.
    """
    res = Path(root) / "results"
    sem_path = Path(root) / SEMANTIC_FILE
    sem = read_json(sem_path)["runs"] if sem_path.is_file() else {}
    out: dict[str, list[dict[str, Any]]] = {k: [] for k in
                                            ("lm_ablation", "arch_ablation", "decoding_ablation",
                                             "encoder_ablation", "pipeline")}
    for lm in lms:
        seeds = sorted(res.glob(f"{lm}_seed*.json"))
        if seeds:
            out["lm_ablation"].append({"name": lm, "group": lm, "seeds": [_test_metrics(p, sem) for p in seeds]})
            base = res / f"{lm}_seed0.json"
            if base.is_file():
                out["arch_ablation"].append({"name": f"{lm} baseline", "group": lm, "baseline": True,
                                             "metrics": _test_metrics(base, sem)})
                out["pipeline"].append({"name": f"ClipCap {lm}", "pipeline": True, "leaky": False, "metrics": _test_metrics(base, sem)})
        for path in sorted(res.glob(f"{lm}_*_seed0.json")):
            variant = path.stem[len(lm) + 1:-len("_seed0")]
            out["arch_ablation"].append({"name": f"{lm} {variant}", "group": lm, "metrics": _test_metrics(path, sem)})
    for path in sorted((Path(root) / "decoding" / decoding_lm / f"seed{decoding_seed}").glob("*.json")):
        if path.name.endswith(".predictions.json"):
            continue
        out["decoding_ablation"].append({"name": path.stem, "group": decoding_lm,
                                         "baseline": path.stem == baseline_decoding,
                                         "metrics": _test_metrics(
                                             path, sem, f"decoding/{decoding_lm}/seed{decoding_seed}/{path.stem}")})
    out["encoder_ablation"] = (_encoder_rows(res, sem, "encoder", decoding_lm, "default")
                               + _encoder_rows(res, sem, "music", decoding_lm, music_baseline))
    trivial = Path(root) / "baseline_trivial.json"
    if trivial.is_file():
        metrics = _caption_metrics(read_json(trivial)["test"]["corpus"])
        out["pipeline"].append({"name": "most common training caption", "pipeline": True, "leaky": False,
                                "metrics": metrics})
        if out["lm_ablation"]:
            out["lm_ablation"].append({"name": "most common training caption", "group": "trivial baseline",
                                       "metrics": metrics})
    return out


def collect_inputs(params: CollectParams, *, captioning_dir: str | Path = "",
                   lms: Sequence[str] = (), decoding_seed: int = 0,
                   music_baseline: str = "synth_clap") -> dict[str, list[str]]:
    """Write report inputs under ``params.out_dir``; return ``{section: [paths]}``.

    ``captioning_dir``, ``lms`` and ``music_baseline`` come from the ``captioning`` section (its
    ``out_dir``, ``lms`` and ``music.baseline``), not repeated here; an empty ``captioning_dir``
    collects no captioning rows.
    """
    out = Path(params.out_dir)
    inputs: dict[str, list[str]] = {}
    retrieval = retrieval_rows(params.retrieval_metrics, params.retrieval_dataset)
    if retrieval:
        inputs["retrieval"] = [str(write_json(out / "retrieval.json", {"rows": retrieval}))]
    caps = (captioning_sections(captioning_dir, list(lms), params.decoding_lm, params.baseline_decoding,
                                decoding_seed, music_baseline)
            if captioning_dir else {})
    for section in ("lm_ablation", "arch_ablation", "decoding_ablation", "encoder_ablation"):
        if caps.get(section):
            inputs[section] = [str(write_json(out / f"{section}.json",
                                              {"rows": caps[section], "primary": "CIDEr-D"}))]
    comparison = caps.get("pipeline", []) + reference_rows(params.reference_scores)
    if comparison:
        metrics = [m for m in CAPTION_METRICS.values() if any(m in r["metrics"] for r in comparison)]
        inputs["reference_comparison"] = [str(write_json(out / "reference_comparison.json",
                                                         {"rows": comparison, "metrics": metrics,
                                                          "primary": "CIDEr-D"}))]
    lr = [p for p in params.lr_search if Path(p).is_file()]
    # Relative to the inputs folder (how load_lr_search resolves it): no absolute path in an output.
    figures = [{"name": name, "png": Path(os.path.relpath(png, out)).as_posix()}
               for name, png in params.lr_search_figures.items() if Path(png).is_file()]
    if figures:
        lr.append(str(write_json(out / "lr_search_figures.json", figures)))
    if lr:
        inputs["lr_search"] = lr
    views = [Path(params.llm_views) / n for n in ("paraphrase_report.json", "view_records.json")] \
        if params.llm_views else []
    if views and all(v.is_file() for v in views):
        inputs["llm_views"] = [str(v) for v in views]
    study = [Path(params.pairwise) / n for n in ("agreement.json", "preference.png")] if params.pairwise else []
    if study and all(v.is_file() for v in study):
        inputs["pairwise"] = [str(v) for v in study]
    real = [Path(params.real) / "benchmark.json", Path(params.real) / "captioning" / "scores.json",
            Path(params.real_dataset) / "dataset.json"] if params.real and params.real_dataset else []
    if real and all(v.is_file() for v in real):
        inputs["real"] = [str(v) for v in real]
    if params.vocab and Path(params.vocab).is_file():
        inputs["vocab"] = [params.vocab]
    if params.kinds and Path(params.kinds).is_file():
        inputs["kinds"] = [params.kinds]
    if params.views and Path(params.views).is_file():
        inputs["views"] = [params.views]
    if params.view_source and Path(params.view_source).is_file():
        inputs["view_source"] = [params.view_source]
    corpus = (collect_real_corpus(params.real_clap, params.real_robust, params.real_captioning)
              if params.real_clap and params.real_robust and params.real_captioning else None)
    if corpus is not None:
        inputs["real_corpus"] = [str(write_json(out / "real_corpus.json", corpus))]
    checks = sorted(str(p) for p in Path(params.lr_check).glob("*/check.json")) if params.lr_check else []
    if checks:
        inputs["lr_check"] = checks
    write_json(out / "inputs.json", inputs)
    return inputs


def collect_and_report(collect: CollectParams, out_dir: str | Path, *, captioning_dir: str | Path = "",
                       lms: Sequence[str] = (), decoding_seed: int = 0, music_baseline: str = "synth_clap",
                       extra_inputs: dict[str, list[str]] | None = None, conclusions: Sequence[str | Path] = (), conclusions_out: str | Path = "",
                       build: Callable[..., dict[str, Any]] = build_report) -> dict[str, Any]:
    """Collect the pipeline's results, then build the report (the ``report`` DVC stage).

    ``extra_inputs`` (``params.yaml`` ``report.inputs``) are added to the collected ones.
    The studies' ``conclusions`` files that exist are merged into ``conclusions_out``, which
    the report's findings section shows.
    ``build`` builds the report from the inputs (:func:`build_report`, or its tracked form
    :func:`clapcap.tracked.report.build_report`). Returns its summary.

    Raises:
        ConclusionsError: on a malformed conclusions file or an id defined twice.
    """
    inputs = collect_inputs(collect, captioning_dir=captioning_dir, lms=lms, decoding_seed=decoding_seed,
                            music_baseline=music_baseline)
    skipped = {str(p): r for p in conclusions if (r := skip_reason(p)) is not None}
    for path, reason in skipped.items():  # a study that does not apply to this dataset
        logger.info("conclusions %s left out: skipped (%s)", path, reason)
    present = [p for p in conclusions if Path(p).is_file() and str(p) not in skipped]
    if present and conclusions_out:
        missing = [str(p) for p in conclusions if not Path(p).is_file()]
        if missing:
            logger.warning("conclusions not found (their findings are left out): %s", missing)
        inputs["findings"] = [str(merge_conclusions(present, conclusions_out))]
    for section, paths in (extra_inputs or {}).items():
        inputs.setdefault(section, []).extend(paths)
    return build(inputs, out_dir)
