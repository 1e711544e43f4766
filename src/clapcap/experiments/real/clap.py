"""The real corpus's CLAP, the project's default (issue 41): YAMNet and MiniLM towers with trained heads
(:mod:`clapcap.clap.towers`), measured on the cross-source test set (docs/real_clap.md).

**Features** (:func:`compute_features`, stage ``real_clap_features``): every clip's YAMNet
embedding and AudioSet logits, every distinct caption's MiniLM embedding, the 521 AudioSet
class names' and every label prompt's (``label_prompt`` with the label) MiniLM embeddings, in
one ``.npz``. The towers run once; training reads only this file.

**Training and measurement** (:func:`run_real_clap`, stage ``real_clap``): heads trained per
seed of ``seeds`` on the train split, the epoch chosen on val t2a R@10
(:mod:`clapcap.clap.towers_train`), saved to ``<model_dir>/seed_<s>``; the seed with the best
val R@10 is copied to ``<model_dir>/model`` (the model users load). On the test split, four
systems rank the same captions and clips:

- ``tower_clap``: the trained heads (one row of per-query values per seed);
- ``yamnet_names`` (no training): each caption's MiniLM cosine to the 521 class names; the
  ``baseline_top_classes`` most similar classes ``c`` with cosines ``w_c`` (ties: lower index)
  score clip ``j`` as ``sum_c w_c * sigmoid(logit_jc) / sum_c w_c``;
- ``untrained_heads``: the heads at their seeded initialisation (one row per seed): the towers
  alone without alignment;
- ``class_route`` (when ``class_route``; an ablation row, not saved): heads trained as the
  default's on :func:`with_class_route` features, which append YAMNet's 521 class scores to the
  clip embedding and the text's 521 class-name cosines to the text embedding, so a head can keep
  the route ``yamnet_names`` takes;
- ``chance``: the expected value of a random ranking (R@k only; :func:`chance_recall`).

Metrics are the project's (:func:`clapcap.retrieval.metrics.per_query_metrics`): t2a and a2t
R@k for ``ks`` and mAP@10, each with a percentile bootstrap interval over test queries of the
mean over seeds. **Zero-shot classification**: each labelled test clip's top label prompt among
every label of the test split; ``accuracy`` is the fraction whose top label is one of the
clip's labels (ties: the first label in sorted order), for the trained heads (mean over seeds)
and ``yamnet_names`` (a prompt matched to class names as a caption is). **Per family**: the
same retrieval metrics within each family's test clips and their captions (a smaller pool, so
its chance is given beside it). **Findings** (two-level seed bootstrap,
:mod:`clapcap.evaluation.conclusions`): the trained heads beat ``yamnet_names`` and the
untrained heads at t2a and a2t R@10, and ``class_route`` beats the plain heads (paired by seed);
no finding with a single training seed.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.clap.towers import (
    ProjectionHeads,
    TowerClapConfig,
    load_minilm_sentence_model,
    minilm_features,
    save_tower_clap,
    tower_versions,
    yamnet_features,
)
from clapcap.clap.towers_train import HeadTrainParams, PairedFeatures, similarity, train_heads
from clapcap.data.dump import write_npz_deterministic
from clapcap.errors import InputError
from clapcap.evaluation.conclusions import FindingSpec, evaluate_finding, publish_findings
from clapcap.evaluation.seed_bootstrap import SeedScores
from clapcap.retrieval.bootstrap import bootstrap_ci
from clapcap.retrieval.metrics import chance_recall, per_query_metrics
from clapcap.utils.io import write_json

logger = logging.getLogger(__name__)

SPLITS = ("train", "val", "test")


@dataclass
class HeadsParams:
    """The heads' shape (:class:`~clapcap.clap.towers.TowerClapConfig`)."""

    projection_dim: int = 256
    hidden_dim: int = 0
    init_temperature: float = 0.07


@dataclass
class RealClapParams:
    """``params.yaml`` section ``real_clap`` (module docstring)."""

    dataset_dir: str = "data/real_corpus"
    features: str = "data/features/real_corpus.npz"
    model_dir: str = "models/real_clap"
    out_dir: str = "results/real_clap"
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    heads: HeadsParams = field(default_factory=HeadsParams)
    train: HeadTrainParams = field(default_factory=HeadTrainParams)
    ks: list[int] = field(default_factory=lambda: [1, 5, 10])
    n_resamples: int = 2000
    confidence: float = 0.95
    bootstrap_seed: int = 0
    baseline_top_classes: int = 5
    label_prompt: str = "the sound of {label}"
    extra_tests: dict[str, str] = field(default_factory=lambda: {"real_benchmark": "data/real"})
    class_route: bool = True
    track: bool = True
    registered_model: str = "clapcap-tower-clap"
    alias: str = "champion"

    def __post_init__(self) -> None:
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"real_clap.seeds: distinct seeds expected, found {self.seeds}")
        if 10 not in self.ks:
            raise ValueError(f"real_clap.ks must hold 10 (the findings' R@10), found {self.ks}")
        if self.baseline_top_classes < 1 or "{label}" not in self.label_prompt:
            raise ValueError("real_clap: baseline_top_classes >= 1 and a label_prompt with {label} expected")


def compute_features(params: RealClapParams, *, progress: bool = True) -> list[Path]:
    """Run both towers once over the corpus (``params.features``) and each extra test set
    (``extra_features(params)``); module docstring."""
    from clapcap.pretrained.yamnet import load_yamnet

    yamnet, st = load_yamnet(), load_minilm_sentence_model()
    return [dataset_features(params.dataset_dir, params.features, params.label_prompt, yamnet, st, progress=progress),
            *(dataset_features(d, path, params.label_prompt, yamnet, st, progress=progress)
              for d, path in zip(params.extra_tests.values(), extra_features(params).values(), strict=True))]


def extra_features(params: RealClapParams) -> dict[str, Path]:
    """``{name: features file}`` of the extra test sets: ``<features folder>/<name>.npz``."""
    return {name: Path(params.features).with_name(f"{name}.npz") for name in params.extra_tests}


def dataset_features(dataset_dir: str, path: str | Path, label_prompt: str, yamnet: Any, st: Any, *,
                     progress: bool = True) -> Path:
    """Both towers over one prepared dataset, written to ``path``; a clip's family is its
    ``meta.family`` (the real corpus), else its ``source`` (the real benchmark)."""
    from clapcap.clap.features import iter_split_audio
    from clapcap.data.prepare import load_dataset
    from clapcap.pretrained.yamnet import SAMPLE_RATE

    manifest = load_dataset(dataset_dir).manifest
    waves = (wave for _, wave in iter_split_audio(dataset_dir, "all", SAMPLE_RATE, progress=False))
    audio, logits = yamnet_features(waves, model=yamnet, total=len(manifest), progress=progress)
    captions, owner = [], []
    for i, caps in enumerate(manifest["captions"]):
        captions += list(caps)
        owner += [i] * len(caps)
    label_lists = [labs if isinstance(labs, list) else [] for labs in manifest.get("labels", [None] * len(manifest))]
    labels = sorted({lab for labs in label_lists for lab in labs})
    distinct = sorted(set(captions))
    row_of = {c: i for i, c in enumerate(distinct)}
    distinct_text = minilm_features(distinct, model=st, progress=progress)
    label_matrix = np.zeros((len(manifest), len(labels)), dtype=bool)
    for i, labs in enumerate(label_lists):
        for lab in labs:
            label_matrix[i, labels.index(lab)] = True
    metas = [m if isinstance(m, dict) else {} for m in manifest.get("meta", [None] * len(manifest))]
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    write_npz_deterministic(tmp, {
        "clip_id": np.asarray(manifest["clip_id"], dtype=str), "split": np.asarray(manifest["split"], dtype=str),
        "family": np.asarray([m.get("family", src) for m, src in zip(metas, manifest["source"], strict=True)],
                             dtype=str),
        "audio": audio, "yamnet_logits": logits,
        "captions": np.asarray(captions, dtype=str), "caption_clip_index": np.asarray(owner, dtype=np.int64),
        "text": distinct_text[[row_of[c] for c in captions]],
        "class_names": np.asarray(yamnet.class_names, dtype=str),
        "class_text": minilm_features(list(yamnet.class_names), model=st, progress=False),
        "labels": np.asarray(labels, dtype=str), "label_matrix": label_matrix,
        "label_text": minilm_features([label_prompt.format(label=lab) for lab in labels], model=st,
                                      progress=False).reshape(len(labels), -1),
    })
    tmp.replace(out)
    logger.info("tower features of %s: %d clips, %d captions, %d labels -> %s", dataset_dir, len(manifest),
                len(captions), len(labels), out)
    return out


def load_features(path: str | Path) -> dict[str, np.ndarray]:
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no tower features; run the real_clap_features stage (dvc repro real_clap_features)")
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def split_features(f: dict[str, np.ndarray], split: str, family: str | None = None) -> tuple[PairedFeatures, np.ndarray]:
    """One split's (optionally one family's) features and its clip rows in the whole corpus."""
    keep = f["split"] == split
    if family is not None:
        keep &= f["family"] == family
    rows = np.flatnonzero(keep)
    if len(rows) == 0:
        raise InputError(f"real corpus features: split {split!r}{' family ' + family if family else ''} has no clips")
    new_index = -np.ones(len(keep), dtype=np.int64)
    new_index[rows] = np.arange(len(rows))
    caps = np.flatnonzero(keep[f["caption_clip_index"]])
    return PairedFeatures(f["audio"][rows], f["text"][caps], new_index[f["caption_clip_index"][caps]]), rows


def with_class_route(f: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The features of the ``class_route`` row: YAMNet's 521 class scores (sigmoid) appended to
    each clip's embedding, and each text's 521 cosines to the class names appended to its
    embedding, so a linear head can keep the route ``yamnet_names`` takes (module docstring)."""
    g = dict(f)
    g["audio"] = np.concatenate([f["audio"], 1.0 / (1.0 + np.exp(-f["yamnet_logits"]))], axis=1).astype(np.float32)
    for key in ("text", "label_text"):
        g[key] = np.concatenate([f[key], f[key] @ f["class_text"].T], axis=1).astype(np.float32)
    return g


def name_baseline_similarity(f: dict[str, np.ndarray], text: np.ndarray, clip_rows: np.ndarray,
                             top: int) -> np.ndarray:
    """The ``yamnet_names`` scores (module docstring): (len(text), len(clip_rows)), float64."""
    cos = text.astype(np.float64) @ f["class_text"].astype(np.float64).T  # both unit length: cosines
    best = np.argsort(-cos, axis=1, kind="stable")[:, :top]
    w = np.take_along_axis(cos, best, axis=1)
    probs = 1.0 / (1.0 + np.exp(-f["yamnet_logits"][clip_rows].astype(np.float64)))  # (N, 521)
    scores = np.einsum("qt,nqt->qn", w, probs[:, best])
    return scores / w.sum(axis=1, keepdims=True)


def zero_shot_accuracy(scores: np.ndarray, positives: np.ndarray) -> np.ndarray:
    """Per clip: 1.0 when the top-scoring label (first in label order among ties) is one of its labels."""
    return positives[np.arange(len(scores)), np.argmax(scores, axis=1)].astype(np.float64)


def _mean_pq(pqs: list[dict[str, dict[str, np.ndarray]]]) -> dict[str, dict[str, np.ndarray]]:
    return {d: {m: np.mean([pq[d][m] for pq in pqs], axis=0) for m in pqs[0][d]} for d in pqs[0]}


def _summary(pq: dict[str, dict[str, np.ndarray]], params: RealClapParams, names: list[str]) -> dict[str, Any]:
    ci = bootstrap_ci({d: {m: pq[d][m] for m in names} for d in pq}, n_resamples=params.n_resamples,
                      seed=params.bootstrap_seed, confidence=params.confidence)
    return {d: {m: {"value": round(float(np.mean(pq[d][m])), 6), "low": round(ci[d][m]["low"], 6),
                    "high": round(ci[d][m]["high"], 6)} for m in names} for d in pq}


# The class_route row: its heads (one per seed) and the with_class_route features they read, of the
# feature set being evaluated (built once per set, not per family).
Routed = tuple[list[ProjectionHeads], dict[str, np.ndarray]] | None


def _systems(f: dict[str, np.ndarray], split: PairedFeatures, rows: np.ndarray, trained: list[ProjectionHeads],
             untrained: list[ProjectionHeads], params: RealClapParams, routed: Routed,
             family: str | None) -> dict[str, list[dict]]:
    ks = tuple(params.ks)
    base = name_baseline_similarity(f, split.text, rows, params.baseline_top_classes)
    out = {"tower_clap": [per_query_metrics(similarity(h, split), split.caption_clip_index, ks=ks) for h in trained],
           "yamnet_names": [per_query_metrics(base, split.caption_clip_index, ks=ks)],
           "untrained_heads": [per_query_metrics(similarity(h, split), split.caption_clip_index, ks=ks)
                               for h in untrained]}
    if routed is not None:
        heads, features = routed
        split2, _ = split_features(features, "test", family)
        out["class_route"] = [per_query_metrics(similarity(h, split2), split2.caption_clip_index, ks=ks)
                              for h in heads]
    return out


def evaluate(f: dict[str, np.ndarray], trained: list[ProjectionHeads], untrained: list[ProjectionHeads],
             params: RealClapParams, *, family: str | None = None,
             routed: Routed = None) -> tuple[dict[str, Any], dict[str, list[dict]]]:
    """Every system's metrics with intervals on the test split (or one family of it)."""
    split, rows = split_features(f, "test", family)
    names = [*(f"r@{k}" for k in params.ks), "map@10"]
    systems = _systems(f, split, rows, trained, untrained, params, routed, family)
    counts = np.bincount(split.caption_clip_index, minlength=len(rows))
    out: dict[str, Any] = {"clips": len(rows), "captions": len(split.text),
                           "chance": {f"r@{k}": chance_recall(counts, k) for k in params.ks}}
    for name, pqs in systems.items():
        out[name] = _summary(_mean_pq(pqs), params, names)
    return out, systems


def label_accuracy(f: dict[str, np.ndarray], heads: list[ProjectionHeads], rows: np.ndarray,
                   used: np.ndarray) -> list[np.ndarray]:
    """Per heads, each clip of ``rows``'s zero-shot accuracy over the labels ``used``
    (:func:`zero_shot_accuracy` of its label-prompt similarities)."""
    import torch

    out = []
    for h in heads:
        with torch.no_grad():
            a = h.embed_audio(torch.from_numpy(f["audio"][rows])).numpy()
            t = h.embed_text(torch.from_numpy(f["label_text"][used])).numpy()
        out.append(zero_shot_accuracy(a @ t.T, f["label_matrix"][rows][:, used]))
    return out


def zero_shot(f: dict[str, np.ndarray], trained: list[ProjectionHeads], params: RealClapParams,
              routed: Routed = None) -> dict[str, Any]:
    """Zero-shot label accuracy on the labelled test clips (module docstring)."""
    rows = np.flatnonzero((f["split"] == "test") & f["label_matrix"].any(axis=1))
    if len(rows) == 0:
        return {"clips": 0, "labels": 0, "chance": None, "tower_clap": None, "tower_clap_per_seed": [],
                "yamnet_names": None}
    used = f["label_matrix"][rows].any(axis=0)
    positives, label_text = f["label_matrix"][rows][:, used], f["label_text"][used]
    accs = label_accuracy(f, trained, rows, used)
    routed_acc = {"class_route": round(float(np.mean(label_accuracy(routed[1], routed[0], rows, used))), 6)} \
        if routed is not None else {}
    base = name_baseline_similarity(f, label_text, rows, params.baseline_top_classes).T  # (clips, labels)
    chance = float(np.mean(positives.sum(axis=1) / positives.shape[1]))
    return {"clips": len(rows), "labels": int(used.sum()), "chance": round(chance, 6),
            "tower_clap": round(float(np.mean(accs)), 6), "tower_clap_per_seed": [round(float(a.mean()), 6) for a in accs],
            "yamnet_names": round(float(zero_shot_accuracy(base, positives).mean()), 6), **routed_acc}


def _findings(systems: dict[str, list[dict]], params: RealClapParams, *, prefix: str,
              where: str) -> list[dict]:
    def scores(name: str, direction: str) -> SeedScores:
        rows = np.stack([pq[direction]["r@10"] for pq in systems[name]])
        if name == "yamnet_names":  # no training, so no seed spread: a noise floor of 0 is exact
            return SeedScores(rows, (0,), noise_floor=0.0)
        return SeedScores(rows, tuple(params.seeds))

    if len(params.seeds) < 2:
        logger.warning("real_clap: one training seed says nothing about another training run: no findings")
        return []
    out = []
    if "class_route" in systems:
        for direction in ("t2a", "a2t"):
            spec = FindingSpec(id=f"{prefix}.class_route.{direction}_r10_vs_tower_clap", metric=f"{direction} r@10",
                               a="class_route", b="tower_clap", claim="greater",
                               statement=f"{where}, heads that also read YAMNet's class scores and the caption's "
                                         f"class-name similarities beat the plain heads ({direction} R@10)")
            out.append(evaluate_finding(spec, scores("class_route", direction), scores("tower_clap", direction),
                                        paired_seeds=True, n_resamples=params.n_resamples,
                                        confidence=params.confidence, rng_seed=params.bootstrap_seed))
    for direction in ("t2a", "a2t"):
        for b, what in (("yamnet_names", "YAMNet's own class names matched to the caption"),
                        ("untrained_heads", "the same towers with untrained heads")):
            spec = FindingSpec(id=f"{prefix}.{direction}_r10_vs_{b}", metric=f"{direction} r@10", a="tower_clap", b=b,
                               claim="greater",
                               statement=f"{where}, the tower CLAP beats {what} ({direction} R@10)")
            out.append(evaluate_finding(spec, scores("tower_clap", direction), scores(b, direction),
                                        paired_seeds=b == "untrained_heads", n_resamples=params.n_resamples,
                                        confidence=params.confidence, rng_seed=params.bootstrap_seed))
    return out


def run_real_clap(params: RealClapParams) -> dict[str, Any]:
    """Train the heads per seed, save them, measure every system (module docstring); writes
    ``<out_dir>/metrics.json``, ``history.json`` (one row per seed and epoch), ``report.md``, ``conclusions.json`` and ``findings.md``."""
    import torch

    f = load_features(params.features)
    cfg = TowerClapConfig(audio_dim=f["audio"].shape[1], text_dim=f["text"].shape[1],
                          projection_dim=params.heads.projection_dim, hidden_dim=params.heads.hidden_dim,
                          init_temperature=params.heads.init_temperature)
    train, _ = split_features(f, "train")
    val, _ = split_features(f, "val")
    trained, untrained, history, val_best = [], [], [], {}
    towers = tower_versions()
    for seed in params.seeds:
        torch.manual_seed(seed)
        untrained.append(ProjectionHeads(cfg).eval())
        heads, hist = train_heads(cfg, params.train, train, val, seed=seed)
        trained.append(heads)
        history += [{"seed": seed, **h} for h in hist]
        val_best[seed] = max(h["val_t2a_r@10"] for h in hist)
        save_tower_clap(heads, Path(params.model_dir) / f"seed_{seed}", towers=towers,
                        extra={"seed": seed, "val_t2a_r@10": val_best[seed], "trained_on": params.dataset_dir})
    routed_heads: list[ProjectionHeads] = []
    if params.class_route:
        fr = with_class_route(f)
        cfg_r = replace(cfg, audio_dim=fr["audio"].shape[1], text_dim=fr["text"].shape[1])
        tr_r, va_r = split_features(fr, "train")[0], split_features(fr, "val")[0]
        routed_heads = [train_heads(cfg_r, params.train, tr_r, va_r, seed=seed)[0] for seed in params.seeds]
    routed: Routed = (routed_heads, fr) if routed_heads else None
    best_seed = max(params.seeds, key=lambda s: (val_best[s], -s))
    model = Path(params.model_dir) / "model"
    shutil.rmtree(model, ignore_errors=True)
    shutil.copytree(Path(params.model_dir) / f"seed_{best_seed}", model)
    pooled, systems = evaluate(f, trained, untrained, params, routed=routed)
    families = {fam: evaluate(f, trained, untrained, params, family=fam, routed=routed)[0]
                for fam in sorted(set(f["family"][f["split"] == "test"]))}
    findings = _findings(systems, params, prefix="real_clap",
                         where=f"On real sounds from sources no training clip comes from ({pooled['clips']} clips)")
    extra: dict[str, Any] = {}
    for name, path in extra_features(params).items():
        g = load_features(path)
        routed_g: Routed = (routed_heads, with_class_route(g)) if routed_heads else None
        block, extra_systems = evaluate(g, trained, untrained, params, routed=routed_g)
        extra[name] = {"test": block, "zero_shot": zero_shot(g, trained, params, routed_g),
                       "test_per_family": {fam: evaluate(g, trained, untrained, params, family=fam, routed=routed_g)[0]
                                           for fam in sorted(set(g["family"][g["split"] == "test"]))}}
        findings += _findings(extra_systems, params, prefix=f"real_clap.{name}",
                              where=f"On the {block['clips']} real recordings of {name} ({params.extra_tests[name]})")
    metrics = {"test": pooled, "test_per_family": families, "zero_shot": zero_shot(f, trained, params, routed),
               "extra_tests": extra,
               "seeds": params.seeds, "model_seed": best_seed, "val_t2a_r@10": {str(s): v for s, v in val_best.items()},
               "clips": {s: int((f["split"] == s).sum()) for s in SPLITS}}
    out = Path(params.out_dir)
    write_json(out / "metrics.json", metrics)
    write_json(out / "history.json", history)
    publish_findings(findings, out / "conclusions.json", out / "findings.md")
    (out / "report.md").write_text(report_markdown(metrics))
    return metrics


def _cell(m: dict[str, float]) -> str:
    return f"{m['value']:.3f} [{m['low']:.3f}, {m['high']:.3f}]"


def report_markdown(metrics: dict[str, Any]) -> str:
    """The report's tables: pooled test, per family, zero-shot."""
    def table(block: dict[str, Any]) -> list[str]:
        names = list(block["tower_clap"]["t2a"])
        lines = ["| system | " + " | ".join(f"{d} {m}" for d in ("t2a", "a2t") for m in names) + " |",
                 "|---|" + "---|" * (2 * len(names))]
        for system in [s for s in ("tower_clap", "class_route", "yamnet_names", "untrained_heads") if s in block]:
            lines.append(f"| {system} | " + " | ".join(_cell(block[system][d][m]) for d in ("t2a", "a2t")
                                                       for m in names) + " |")
        lines.append("| chance | " + " | ".join(f"{block['chance'][m][d]:.3f}" if m in block["chance"] else "-"
                                                 for d in ("t2a", "a2t") for m in names) + " |")
        return lines

    def section(title: str, m: dict[str, Any], level: str) -> list[str]:
        test, zs = m["test"], m["zero_shot"]
        out = [f"{level} {title}", "", f"{test['clips']} clips, {test['captions']} captions; seeds {metrics['seeds']} "
               "(mean over seeds, 95 % bootstrap interval over test queries).", "", *table(test), ""]
        for fam, block in m["test_per_family"].items():
            out += [f"{level}# {fam} ({block['clips']} clips, {block['captions']} captions)", "", *table(block), ""]
        out += [f"{level}# Zero-shot label accuracy", ""] + (["No labelled clips.", ""] if not zs["clips"] else [
                f"{zs['clips']} labelled test clips, {zs['labels']} labels: tower CLAP {zs['tower_clap']:.3f} "
                f"(per seed {zs['tower_clap_per_seed']}), "
                + (f"class route {zs['class_route']:.3f}, " if "class_route" in zs else "")
                + f"YAMNet class names {zs['yamnet_names']:.3f}, "
                f"chance {zs['chance']:.3f}.", ""])
        return out

    lines = section("The tower CLAP on the real corpus's cross-source test", metrics, "#")
    for name, m in metrics.get("extra_tests", {}).items():
        lines += section(f"The tower CLAP on `{name}`", m, "##")
    return "\n".join(lines)
