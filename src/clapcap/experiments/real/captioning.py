"""The captioning study's inputs and reference captioners on the real corpus (stages
``real_caption_dump`` and ``real_caption_refs``, params.yaml ``real_caption_refs``;
docs/captioning.md, "On the real corpus").

**Dump** (:func:`write_dump`, stage ``real_caption_dump``): the tower features as the captioning study's embedding dump, a
folder of ``<split>.npz``: ``audio_embeds``/``text_embeds`` in the real tower CLAP's joint space
(``model_dir``), YAMNet's own 1024-d clip embedding as the extra array ``yamnet``.

**Reference captioners**, on the test split, scored with the study's metrics (aac-metrics):

- ``retrieval``: each test clip's nearest training caption in the tower CLAP's joint space
  (:func:`clapcap.reference.baselines.nearest_caption_predictions`; it reads only train);
- ``labels``: YAMNet's top AudioSet classes written into a caption by rule:
  ``the sound of <top class>``, ``and <second class>`` when the second's probability is at
  least ``label_min_ratio`` of the first's (class names lower-cased);
- the most common training caption is the study's own trivial baseline
  (``baseline_trivial.json``), not repeated here.

**Caption overlap** (the real corpus's leakage question): a test clip whose reference caption
also captions some training clip, verbatim, can be matched word for word by any system that
learnt the training captions. Per system the per-clip CIDEr-D of those clips and of the
others are compared with :func:`clapcap.evaluation.leakage.decide_leakage` (the overlapping
clips as the "seen" group); the AudioSet-based check of the reference study does not apply (no
clip of the real corpus carries ``is_audioset_eval``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.data.prepare import load_dataset
from clapcap.errors import InputError
from clapcap.evaluation.captioning_metrics import score_captions
from clapcap.evaluation.leakage import LeakageParams, decide_leakage
from clapcap.experiments.captioning.findings import unseen_test_clips
from clapcap.experiments.real.clap import load_features
from clapcap.reference.baselines import nearest_caption_predictions
from clapcap.utils.io import read_json, write_json

logger = logging.getLogger(__name__)

SPLITS = ("train", "val", "test")


@dataclass
class RealCaptionRefsParams:
    """``params.yaml`` section ``real_caption_refs`` (module docstring)."""

    features: str = "data/features/real_corpus.npz"
    model_dir: str = "models/real_clap/model"
    dataset_dir: str = "data/real_corpus"
    dump_dir: str = "data/embeddings/tower_clap/real_corpus"
    out_dir: str = "results/real_captioning/references"
    # The study's runs, scored beside the references ({name: test predictions JSON of a run}).
    systems: dict[str, str] = field(default_factory=dict)
    metrics: list[str] = field(default_factory=lambda: ["bleu_1", "bleu_4", "meteor", "rouge_l", "cider_d"])
    label_min_ratio: float = 0.5
    overlap: LeakageParams = field(default_factory=lambda: LeakageParams(metric="cider_d", seen_flag=True))

    def __post_init__(self) -> None:
        if not 0.0 < self.label_min_ratio <= 1.0:
            raise ValueError(f"real_caption_refs.label_min_ratio: expected (0, 1], found {self.label_min_ratio}")


def write_dump(features: str | Path, model_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """The dump folder of the module docstring (one ``<split>.npz`` per split)."""
    import torch

    from clapcap.clap.towers import load_tower_clap
    from clapcap.data.dump import EmbeddingDump, save_dump

    f = load_features(features)
    heads, config = load_tower_clap(model_dir)
    with torch.no_grad():
        audio = heads.embed_audio(torch.from_numpy(f["audio"])).numpy()
        text = heads.embed_text(torch.from_numpy(f["text"])).numpy()
    meta = {"encoder": {"name": "tower_clap", "model_dir": str(model_dir), "training": config.get("training", {})}}
    paths = []
    for split in SPLITS:
        rows = np.flatnonzero(f["split"] == split)
        new = -np.ones(len(f["split"]), dtype=np.int64)
        new[rows] = np.arange(len(rows))
        caps = np.flatnonzero(f["split"][f["caption_clip_index"]] == split)
        dump = EmbeddingDump(audio_embeds=audio[rows], text_embeds=text[caps],
                             caption_clip_index=new[f["caption_clip_index"][caps]],
                             clip_ids=[str(c) for c in f["clip_id"][rows]],
                             captions=[str(c) for c in f["captions"][caps]], meta=meta,
                             extras={"yamnet": f["audio"][rows].astype(np.float32)})
        paths.append(save_dump(dump, Path(out_dir) / f"{split}.npz"))
    return paths


def label_captions(f: dict[str, np.ndarray], clip_ids: list[str], min_ratio: float) -> dict[str, str]:
    """``{clip_id: caption}`` from YAMNet's top classes (module docstring)."""
    row = {str(c): i for i, c in enumerate(f["clip_id"])}
    names = [str(n).lower() for n in f["class_names"]]
    out = {}
    for clip in clip_ids:
        probs = 1.0 / (1.0 + np.exp(-f["yamnet_logits"][row[clip]].astype(np.float64)))
        first, second = np.argsort(-probs, kind="stable")[:2]
        text = f"the sound of {names[first]}"
        if probs[second] >= min_ratio * probs[first]:
            text += f" and {names[second]}"
        out[clip] = text
    return out


def run_real_caption_refs(params: RealCaptionRefsParams) -> dict[str, Any]:
    """Reference captioners, every system's scores and the overlap check; writes
    ``predictions_<name>.json``, ``scores.json``, ``summary.json`` (DVC metrics: numbers only)
    and ``report.md`` to ``out_dir``. Returns the scores."""
    f = load_features(params.features)
    manifest = load_dataset(params.dataset_dir).manifest
    test = manifest[manifest["split"] == "test"]
    refs = {str(c): list(caps) for c, caps in zip(test["clip_id"], test["captions"], strict=True)}
    dump = Path(params.dump_dir)
    predictions = {"retrieval": nearest_caption_predictions(dump / "train.npz", dump / "test.npz"),
                   "labels": label_captions(f, list(refs), params.label_min_ratio)}
    out = Path(params.out_dir)
    for name, preds in predictions.items():
        write_json(out / f"predictions_{name}.json", preds)
    for name, path in params.systems.items():  # the study's runs, scored here as the references are
        if not Path(path).is_file():
            raise InputError(f"real_caption_refs.systems.{name}: {path} not found; run its captioning stage first")
        predictions[name] = read_json(path)
    per_clip: dict[str, dict[str, float]] = {}
    scores: dict[str, Any] = {"n_test_clips": len(refs), "systems": {}}
    for name, preds in predictions.items():
        s = score_captions(preds, refs, metrics=params.metrics)
        scores["systems"][name] = {"corpus": s["corpus"], "unavailable": s["unavailable"]}
        per_clip[name] = {c: v[params.overlap.metric] for c, v in s["per_clip"].items()}
    unseen = unseen_test_clips(manifest)  # the findings' unseen clips: the same split of the test clips
    flags = {c: c not in unseen for c in refs}
    scores["overlap"] = {"clips_with_a_training_caption": int(sum(flags.values())),
                         "systems": {n: {k: v for k, v in decide_leakage(pc, flags, params=params.overlap).items()
                                         if k not in ("seen", "held_out")} | {
                             "overlapping_mean": float(np.mean([pc[c] for c in pc if flags.get(c)] or [0.0])),
                             "other_mean": float(np.mean([pc[c] for c in pc if flags.get(c) is False] or [0.0]))}
                             for n, pc in per_clip.items()}}
    write_json(out / "scores.json", scores)
    write_json(out / "summary.json", summary(scores))
    (out / "report.md").write_text(report_markdown(scores, params.metrics))
    return scores


def summary(scores: dict[str, Any]) -> dict[str, Any]:
    """The DVC metrics file: per system its corpus scores and its CIDEr-D on the overlapping
    test clips and on the others; numbers only (``scores.json`` holds the rest)."""
    return {"overlapping_clips": scores["overlap"]["clips_with_a_training_caption"],
            **{name: {**s["corpus"], "cider_d_overlapping": scores["overlap"]["systems"][name]["overlapping_mean"],
                      "cider_d_others": scores["overlap"]["systems"][name]["other_mean"]}
               for name, s in scores["systems"].items()}}


def report_markdown(scores: dict[str, Any], metrics: list[str]) -> str:
    lines = [f"Test: {scores['n_test_clips']} clips of the real corpus's cross-source split.", "",
             "| system | " + " | ".join(metrics) + " |", "|---|" + "---:|" * len(metrics)]
    for name, s in scores["systems"].items():
        lines.append(f"| {name} | " + " | ".join(f"{s['corpus'][m]:.3f}" if m in s["corpus"] else "–"
                                                for m in metrics) + " |")
    ov = scores["overlap"]
    lines += ["", f"Caption overlap: {ov['clips_with_a_training_caption']} test clips have a reference caption "
              "that also captions a training clip.", "",
              "The test's verdict: `leaky` when the overlapping clips score significantly higher (p < alpha, "
              "lift >= min_lift): the system's score rests on captions shared with training.", "",
              "| system | CIDEr-D, overlapping clips | CIDEr-D, the others | p (one-sided) | verdict |",
              "|---|---:|---:|---:|---|"]
    for name, o in ov["systems"].items():
        p = f"{o['p_value']:.4f}" if o["p_value"] is not None else "–"
        lines.append(f"| {name} | {o['overlapping_mean']:.3f} | {o['other_mean']:.3f} | {p} | "
                     f"{o['empirical_verdict']} |")
    return "\n".join(lines) + "\n"
