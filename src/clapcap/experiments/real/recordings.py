"""The real-recordings benchmark's measurements (docs/real.md): what the corpus-trained models do
on sounds no generator made.

**Retrieval** (:func:`run_real_retrieval`): every CLAP of ``robust_benchmark.models`` (the
synthetic CLAP, the captions-only control, RobustCLAP) on the real clips, with the original
captions and the two rule-written views: t2a/a2t R@k, mAP@10 and the label-level zero-shot
check, with bootstrap intervals (:func:`clapcap.experiments.robust.benchmark.evaluate_model`); then

- each model against **chance**, a finding per direction at R@10: chance for t2a is
  ``k / n_clips`` (one relevant clip per caption), for a2t it is ``1 - C(M - c, k) / C(M, k)``
  averaged over clips (``M`` captions in all, ``c`` of them the clip's own): the probability
  that a random ranking puts one of the clip's captions in the top ``k``. A model *holds*
  "above chance" when the item bootstrap's interval of (model - chance) lies above 0;
- RobustCLAP's findings over fine-tune seeds, the same statements as the corpus's
  (:func:`clapcap.experiments.robust.seeds.seed_findings`), with ids ``real.robust.*``.

**Captioning** (:func:`run_real_captioning`): the registered champion captioner (its encoder
and decoding from ``champion.json``), the retrieval captioner (nearest corpus training caption
in the synthetic CLAP's space) and the most-common-training-caption baseline, scored with
aac-metrics on the real captions (plus ``sbert_sim_minilm``, the similarity half of FENSE with
the MiniLM that installs offline: FENSE's own SBERT and error checker do not), each metric with
a percentile bootstrap interval of its mean per-clip score (for CIDEr-D the corpus score is that
mean; for BLEU and METEOR the corpus score is computed otherwise, and the interval is of the
per-clip mean beside it).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clapcap.compute import Compute, or_default
from clapcap.data.prepare import load_dataset
from clapcap.evaluation.conclusions import FindingSpec, evaluate_finding, publish_findings
from clapcap.evaluation.seed_bootstrap import SeedScores
from clapcap.experiments.robust.benchmark import (
    ZS,
    check_models,
    drops,
    evaluate_model,
    load_waves,
    sample_rate_of,
)
from clapcap.experiments.robust.config import RobustBenchParams, RobustSeedParams
from clapcap.experiments.robust.report import write_tables
from clapcap.experiments.robust.seeds import seed_findings, seed_model_dirs
from clapcap.retrieval.bootstrap import paired_bootstrap
from clapcap.retrieval.metrics import chance_recall
from clapcap.robust.config import RobustTrainParams
from clapcap.utils.io import read_json, write_json

logger = logging.getLogger(__name__)


@dataclass
class RealBenchParams:
    """``params.yaml`` section ``real_benchmark``: the models and settings of
    ``robust_benchmark`` and ``robust_seeds``, on the real set."""

    dataset_dir: str = "data/real"
    out_dir: str = "results/real"
    benchmarks: dict[str, str] = field(default_factory=lambda: {"original": "captions",
                                                                "view1": "paraphrases_v1",
                                                                "view2": "paraphrases_v2"})
    chance_k: int = 10
    conclusions: str = "results/real/conclusions.json"
    findings_md: str = "results/real/findings.md"


def _chance_findings(pqs: dict[str, Any], names: list[str], chance: dict[str, float], k: int,
                     n_resamples: int, confidence: float) -> list[dict]:
    found = []
    for name in names:
        for direction in ("t2a", "a2t"):
            values = np.asarray(pqs[name]["original"][direction][f"r@{k}"], dtype=np.float64)
            spec = FindingSpec(id=f"real.{_slug(name)}.{direction}_r{k}.vs_chance",
                               statement=f"{name} (trained on the synthetic corpus) ranks real recordings "
                                         f"better than chance ({direction} R@{k}, chance {chance[direction]:.3f})",
                               metric=f"original/{direction}/r@{k}", a=name, b="chance", claim="greater")
            a = SeedScores(values[None, :], (0,), noise_floor=0.0)
            b = SeedScores(np.full((1, len(values)), chance[direction]), (0,), noise_floor=0.0)
            found.append(evaluate_finding(spec, a, b, n_resamples=n_resamples, confidence=confidence))
    return found


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name).strip("_").lower()


def run_real_retrieval(real: RealBenchParams, bench: RobustBenchParams, study: RobustSeedParams,
                       train: RobustTrainParams, control: RobustTrainParams, *,
                       compute: Compute | None = None) -> dict[str, Any]:
    """Benchmark every model on the real set; write ``benchmark.json`` (+ Markdown and LaTeX
    tables), the dumps, and the findings (``real.conclusions``, ``real.findings_md``).

    Returns:
        The result dict written to ``<out_dir>/benchmark.json``.
    """
    compute = or_default(compute)
    bench = replace(bench, paraphrase_dir=real.dataset_dir, out_dir=real.out_dir, benchmarks=dict(real.benchmarks))
    check_models(bench.models)
    df = load_dataset(real.dataset_dir).split(bench.split)
    waves, ids = load_waves(real.dataset_dir, bench.split, sample_rate_of(bench))
    assert ids == list(df["clip_id"]), "audio order must follow the manifest"
    chance = chance_recall([len(c) for c in df["captions"]], real.chance_k)
    result: dict[str, Any] = {"split": bench.split, "n_clips": len(df), "params": {k: v for k, v in asdict(bench).items() if not k.startswith("register")},
                              "chance": {f"r@{real.chance_k}": chance}, "models": {}, "drops": {}}
    pqs = {}
    for name, path in bench.models.items():
        logger.info("real benchmark: %s (%s) on %d clips", name, path, len(df))
        pqs[name], result["models"][name] = evaluate_model(name, path, df, waves, bench, compute=compute)
        result["drops"][name] = drops(pqs[name], bench)
    result["paired"] = {b: paired_bootstrap(pqs[bench.candidate][b], pqs[bench.base][b], n_resamples=bench.n_resamples,
                                            seed=bench.seed, confidence=bench.confidence)
                        for b in [*bench.benchmarks, ZS]}
    result["register"] = {"decision": False, "reason": "the real set only measures; registration is "
                          "decided on the corpus (robust_benchmark)", "basis": ""}
    write_json(Path(real.out_dir) / "benchmark.json", result)
    write_tables(result, bench, Path(real.out_dir))
    findings = _chance_findings(pqs, list(bench.models), chance, real.chance_k, study.n_resamples, study.confidence)
    dirs = {"candidate": seed_model_dirs(train, study, "candidate"),
            "control": seed_model_dirs(control, study, "control")}
    findings += seed_findings(bench, replace(study, results_dir=str(Path(real.out_dir) / "seeds")), dirs,
                              prefix="real.robust", compute=compute)
    publish_findings(findings, real.conclusions, real.findings_md)
    return result


@dataclass
class RealCaptionParams:
    """``params.yaml`` section ``real_captioning``."""

    dataset_dir: str = "data/real"
    out_dir: str = "results/real/captioning"
    champion: str = "results/captioning/champion.json"
    train_dump: str = "data/embeddings/synth_clap/corpus/train.npz"
    metrics: list[str] = field(default_factory=lambda: ["bleu_1", "bleu_4", "meteor", "rouge_l", "cider_d",
                                                        "spice", "spider", "fense"])
    sbert_minilm: bool = True
    n_resamples: int = 1000
    confidence: float = 0.95
    seed: int = 0


def _systems(params: RealCaptionParams, df: pd.DataFrame, compute: Compute) -> dict[str, dict[str, str]]:
    """``{system: {clip_id: caption}}`` for the champion, the retrieval captioner and the baseline;
    the clips are embedded once, with the champion's encoder, for the first two."""
    from clapcap.captioning.config import DecodingConfig
    from clapcap.captioning.data import most_common_caption
    from clapcap.captioning.evaluate import guard_empty
    from clapcap.captioning.generation import generate_captions
    from clapcap.captioning.model import load_captioner
    from clapcap.config import from_dict
    from clapcap.data.dump import load_dump
    from clapcap.encoders.base import EncoderConfig
    from clapcap.encoders.factory import create_encoder
    from clapcap.reference.baselines import nearest_captions

    champion = read_json(params.champion)
    if champion.get("input") != "audio":
        raise ValueError(f"{params.champion}: the champion takes {champion.get('input')!r} input; "
                         "the real benchmark captions audio")
    enc_cfg = from_dict(EncoderConfig, {k: v for k, v in champion["encoder"].items() if k != "device"})
    encoder = create_encoder(enc_cfg.with_device(compute.device))
    waves, _ = load_waves(params.dataset_dir, "test", encoder.sample_rate)
    audio = np.asarray(encoder.embed_audio(waves), dtype=np.float32)
    ids = list(df["clip_id"])
    model = load_captioner(champion["checkpoint"], device=compute.device)
    captions = generate_captions(model, audio, from_dict(DecodingConfig, champion["decoding"]))
    out = {f"champion ({champion['name']})": guard_empty(dict(zip(ids, captions, strict=True))),
           "retrieval captioner": nearest_captions(audio, ids, params.train_dump,
                                                   origin=f"the champion's encoder on {params.dataset_dir}")}
    # The study's own definition (ties broken alphabetically), as in caption_baseline.
    common = most_common_caption([list(load_dump(params.train_dump).captions)])
    out["most common training caption"] = dict.fromkeys(ids, common)
    return out


def run_real_captioning(params: RealCaptionParams, *, compute: Compute | None = None) -> dict[str, Any]:
    """Caption the real clips with each system and score them; write ``scores.json`` and
    ``predictions.json`` under ``out_dir``.

    Returns:
        ``{"n_clips", "systems": {name: {"corpus", "ci", "unavailable", "primary"}}}``.
    """
    from clapcap.evaluation.captioning_metrics import score_captions
    from clapcap.evaluation.sbert import METRIC as SBERT
    from clapcap.evaluation.sbert import load_minilm
    from clapcap.evaluation.sbert import score_predictions as sbert_scores
    from clapcap.experiments.captioning.scores import mean_interval

    compute = or_default(compute)
    df = load_dataset(params.dataset_dir).split("test")
    refs = dict(zip(df["clip_id"], df["captions"], strict=True))
    systems = _systems(params, df, compute)
    result: dict[str, Any] = {"n_clips": len(df), "systems": {}}
    minilm = load_minilm(compute.device) if params.sbert_minilm else None
    for name, preds in systems.items():
        logger.info("scoring %s on %d real clips", name, len(preds))
        s = score_captions(preds, refs, metrics=params.metrics)
        if minilm is not None:  # FENSE's SBERT part with the MiniLM that installs offline
            sb = sbert_scores(preds, refs, model=minilm, device=compute.device)
            s["corpus"][SBERT] = sb["corpus"]
            for c in refs:
                s["per_clip"][c][SBERT] = sb["items"][c]
        ci = {m: mean_interval(np.asarray([s["per_clip"][c][m] for c in refs], dtype=np.float64),
                              n_resamples=params.n_resamples, seed=params.seed, confidence=params.confidence)
              for m in s["corpus"] if all(m in s["per_clip"][c] for c in refs)}
        result["systems"][name] = {"corpus": s["corpus"], "ci": ci, "unavailable": s.get("unavailable", {}),
                                   "primary": s.get("primary"), "n_distinct_captions": len(set(preds.values()))}
    out = Path(params.out_dir)
    write_json(out / "predictions.json", systems)
    write_json(out / "scores.json", result)
    return result
