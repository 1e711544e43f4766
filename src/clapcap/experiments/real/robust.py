"""RobustCLAP on the real corpus's tower CLAP: a multi-view fine-tune of its heads on WordNet's
lexical views of the real captions (docs/robust.md, "RobustCLAP on real captions").

**Inputs.** The tower features of the real corpus (stage ``real_clap_features``), the heads of
each seed of the default tower CLAP (``models/real_clap/seed_<s>``, stage ``real_clap``) and the
paraphrased real corpus (stage ``real_paraphrase``: view 2 by WordNet, view 1 null, a held-out
view on test). Each view's text runs through the same frozen MiniLM tower once.

**Systems, per seed** (from the same base heads, the same epochs, batches and learning rate):

- ``base``: the default tower CLAP, unchanged;
- ``control``: fine-tuned on the captions alone (CLIP's loss), the same budget as ``robust``:
  what fine-tuning longer does without views;
- ``robust``: fine-tuned with :func:`clapcap.robust.loss.multiview_loss` on each batch's
  captions and their view 2 (rows without one masked).

The epoch kept is the best on val t2a R@10 of the original captions (no view decides it).

**Measures** (t2a R@10 and mAP@10 over the test split's clips, per caption, mean over seeds):
``original`` (every test caption); ``view2``: the test captions that have a view 2, queried
as written (``view2_original``) and as their view (``view2``); ``heldout``: the same for the
held-out view, whose substitute words no training caption or view holds. **View kinds**: the
view-2 captions again by the kind of word WordNet changed (the paraphrase stage's
``view2_edits.json``): ``view2_source`` where every changed word is a noun (the sound's
source or event: "dog" -> "canine"), ``view2_action`` where every one is a verb ("barks" ->
"yaps"); a view that changes both is in neither. A view's **drop** is the original minus the
view on the same captions. **Zero-shot retention**: each labelled test
clip's top label prompt (:func:`clapcap.experiments.real.clap.label_accuracy`, as ``real_clap``
measures it). **Findings** (two-level bootstrap over seeds
and captions, paired by seed): ``robust`` beats ``control`` on the held-out view (the
headline) and on view 2, ``robust`` loses no more than 0.01 t2a R@10 of ``control`` on the
original captions, and no more than 0.02 of its zero-shot accuracy; per view kind, that the
view costs the base (``real_robust.kinds.<kind>.base_drop``) and that ``robust`` beats
``control`` on it (``real_robust.kinds.<kind>.vs_control``).

**Another view source** (``train_views``; section ``real_robust_llm``, the full study's): the
same systems and measures, with ``robust`` fine-tuned on another paraphrased corpus's view 2 of
the training captions (the LLM's, with its correction pass: stage ``real_paraphrase_llm``) while
val and test keep WordNet's views. So the held-out view, whose words are in no training caption
nor in WordNet's views, asks whether the LLM's views teach a vocabulary beyond their own; its
findings are ``<name>.*`` (``real_robust_llm.heldout_r10_vs_control``, ...).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from clapcap.clap.towers import (
    ProjectionHeads,
    load_minilm_sentence_model,
    load_tower_clap,
    minilm_features,
)
from clapcap.clap.towers_train import HeadTrainParams, PairedFeatures, train_heads
from clapcap.data.prepare import load_dataset
from clapcap.errors import InputError
from clapcap.evaluation.conclusions import FindingSpec, evaluate_finding, publish_findings
from clapcap.evaluation.seed_bootstrap import SeedScores
from clapcap.experiments.real.clap import label_accuracy, load_features, split_features
from clapcap.paraphrase.dataset import EDITS_FILE
from clapcap.paraphrase.heldout import COLUMN as HELDOUT_COLUMN
from clapcap.retrieval.metrics import per_query_metrics
from clapcap.robust.loss import MultiViewLossConfig, clip_loss, multiview_loss, schedule_factors
from clapcap.utils.io import read_json, write_json

logger = logging.getLogger(__name__)

VIEW_SETS = {"view2": "paraphrases_v2", "heldout": HELDOUT_COLUMN}
# View 2 split by the part of speech of the words it changed (module docstring).
KINDS = {"source": "n", "action": "v"}


@dataclass
class RealRobustParams:
    """``params.yaml`` section ``real_robust`` (module docstring)."""

    features: str = "data/features/real_corpus.npz"
    paraphrase_dir: str = "data/real_robust/paraphrased"
    base_model_dir: str = "models/real_clap"
    out_dir: str = "results/real_robust"
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    finetune: HeadTrainParams = field(default_factory=lambda: HeadTrainParams(epochs=10, lr=3e-4, warmup_steps=0))
    loss: MultiViewLossConfig = field(default_factory=lambda: MultiViewLossConfig(w_view1=0.0, view2_start_epoch=0.0))
    n_resamples: int = 2000
    confidence: float = 0.95
    bootstrap_seed: int = 0
    # Another view source to fine-tune on (section real_robust_llm: the LLM's views of the real
    # captions): the training split's view 2 comes from this paraphrased corpus, while every
    # measure keeps paraphrase_dir's val and test views (WordNet's view 2, its held-out view and
    # view kinds), so both sources are judged on the same queries. Empty: paraphrase_dir's.
    train_views: str = ""
    views_label: str = "WordNet"  # how the findings name the views trained on
    name: str = "real_robust"  # the findings' id prefix

    def __post_init__(self) -> None:
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"real_robust.seeds: distinct seeds expected, found {self.seeds}")
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise ValueError(f"name: a findings id prefix such as real_robust_llm expected, found {self.name!r}")


@dataclass(frozen=True)
class ViewedSplit:
    """One split's features with each caption's view embeddings (NaN rows: no view)."""

    pairs: PairedFeatures
    views: dict[str, np.ndarray]  # name -> (M, text_dim), NaN where the caption has none
    kinds: np.ndarray | None = None  # (M,) the view-2 kind of each caption (KINDS key, or "")


def _aligned_views(f: dict[str, np.ndarray], paraphrase_dir: str) -> dict[str, list[str | None]]:
    """Per feature caption row, its view texts (None where none), checked caption by caption."""
    manifest = load_dataset(paraphrase_dir).manifest.set_index("clip_id")
    out: dict[str, list[str | None]] = {name: [] for name in VIEW_SETS}
    seen: dict[int, int] = {}
    for caption, owner in zip(f["captions"], f["caption_clip_index"], strict=True):
        clip = str(f["clip_id"][owner])
        k = seen.get(int(owner), 0)
        seen[int(owner)] = k + 1
        if clip not in manifest.index or k >= len(manifest.at[clip, "captions"]) \
                or manifest.at[clip, "captions"][k] != caption:
            raise InputError(f"{paraphrase_dir}: clip {clip!r} caption {k} does not match the tower features' "
                             f"{caption!r}; rebuild real_paraphrase from the same corpus (dvc repro real_paraphrase)")
        for name, col in VIEW_SETS.items():
            views = manifest.at[clip, col] if col in manifest.columns else None
            out[name].append(views[k] if isinstance(views, list) else None)
    return out


def view_kinds(f: dict[str, np.ndarray], paraphrase_dir: str) -> np.ndarray | None:
    """Per feature caption row, the kind of its view 2 (a :data:`KINDS` key; "" for none, or
    for a view that changes words of both kinds), from the paraphrase stage's edits file; None
    when the stage wrote none (a backend other than wordnet)."""
    path = Path(paraphrase_dir) / EDITS_FILE
    if not path.is_file():
        return None
    edits, seen = read_json(path), {}
    out = np.full(len(f["captions"]), "", dtype=object)
    by_pos = {pos: kind for kind, pos in KINDS.items()}
    for i, owner in enumerate(f["caption_clip_index"]):
        clip = str(f["clip_id"][owner])
        k = seen.get(clip, 0)
        seen[clip] = k + 1
        changes = edits.get(clip, [])[k] if k < len(edits.get(clip, [])) else []
        pos = {p for _, _, p in changes}
        out[i] = by_pos.get(pos.pop(), "") if len(pos) == 1 else ""
    return out


def view_features(f: dict[str, np.ndarray], paraphrase_dir: str, *,
                  embed: Callable[[list[str]], np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """``{view set: (M, text_dim)}`` text-tower embeddings of every caption's view (NaN: none);
    ``embed`` maps texts to rows (default: the frozen MiniLM tower the features came from)."""
    texts = _aligned_views(f, paraphrase_dir)
    distinct = sorted({t for col in texts.values() for t in col if t})
    if embed is None:
        def embed(batch: list[str]) -> np.ndarray:
            return minilm_features(batch, model=load_minilm_sentence_model(), progress=False)
    emb = embed(distinct) if distinct else None
    row = {t: i for i, t in enumerate(distinct)}
    out = {}
    for name, col in texts.items():
        mat = np.full((len(col), f["text"].shape[1]), np.nan, dtype=np.float32)
        for i, t in enumerate(col):
            if t:
                mat[i] = emb[row[t]]
        out[name] = mat
    logger.info("view texts: %s", {n: int(np.isfinite(m[:, 0]).sum()) for n, m in out.items()})
    return out


def viewed_split(f: dict[str, np.ndarray], views: dict[str, np.ndarray], split: str,
                 kinds: np.ndarray | None = None) -> ViewedSplit:
    pairs, _ = split_features(f, split)
    caps = np.flatnonzero(f["split"][f["caption_clip_index"]] == split)  # split_features' caption rows
    return ViewedSplit(pairs, {n: v[caps] for n, v in views.items()}, None if kinds is None else kinds[caps])


def finetune(heads: ProjectionHeads, train: ViewedSplit, val: PairedFeatures, params: RealRobustParams, *,
             seed: int, with_views: bool) -> tuple[ProjectionHeads, list[dict[str, float]]]:
    """Fine-tune a copy of ``heads`` (module docstring): CLIP's loss on the captions, or with
    ``with_views`` the multi-view loss on the captions and their view 2; the best val epoch's
    weights (epoch 0, ``heads`` itself, included)."""
    view2 = torch.from_numpy(np.nan_to_num(train.views["view2"]))
    has_view2 = torch.from_numpy(np.isfinite(train.views["view2"][:, 0]))

    def multiview(h: ProjectionHeads, a: torch.Tensor, t: torch.Tensor, caps: np.ndarray,
                  epoch: float) -> torch.Tensor:
        idx = torch.from_numpy(caps)
        views = {"view2": (h.embed_text(view2[idx]), has_view2[idx])}
        loss, _ = multiview_loss(a, t, views, h.logit_scale, h.logit_scale, params.loss,
                                 schedule_factors(epoch, params.loss))
        return loss

    def captions_only(h: ProjectionHeads, a: torch.Tensor, t: torch.Tensor, _caps: np.ndarray,
                      _epoch: float) -> torch.Tensor:
        return clip_loss(a, t, h.logit_scale, h.logit_scale)

    return train_heads(heads.config, params.finetune, train.pairs, val, seed=seed, start=heads,
                       batch_loss=multiview if with_views else captions_only)


def _per_query(heads: ProjectionHeads, audio: np.ndarray, text: np.ndarray, owner: np.ndarray) -> dict[str, np.ndarray]:
    with torch.no_grad():
        a = heads.embed_audio(torch.from_numpy(audio))
        t = heads.embed_text(torch.from_numpy(np.ascontiguousarray(text)))
    sim = (t @ a.T).numpy().astype(np.float64)
    pq = per_query_metrics(sim, owner, ks=(10,))["t2a"]
    return {"r@10": pq["r@10"], "map@10": pq["map@10"]}


def measure(heads: ProjectionHeads, test: ViewedSplit) -> dict[str, dict[str, np.ndarray]]:
    """Per-caption t2a R@10 and mAP@10 on every query set of the module docstring."""
    p = test.pairs
    out = {"original": _per_query(heads, p.audio, p.text, p.caption_clip_index)}
    for name, mat in test.views.items():
        rows = np.flatnonzero(np.isfinite(mat[:, 0]))
        if len(rows) == 0:
            continue
        # A caption's t2a values depend on its own similarity row alone, so the view's captions
        # are ranked with every other caption in place (a2t needs every clip to keep one).
        mixed = p.text.copy()
        mixed[rows] = mat[rows]
        viewed = _per_query(heads, p.audio, mixed, p.caption_clip_index)
        out[f"{name}_original"] = {m: v[rows] for m, v in out["original"].items()}
        out[name] = {m: v[rows] for m, v in viewed.items()}
        if name == "view2" and test.kinds is not None:
            for kind in KINDS:
                sub = rows[test.kinds[rows] == kind]
                if len(sub):
                    out[f"view2_{kind}_original"] = {m: v[sub] for m, v in out["original"].items()}
                    out[f"view2_{kind}"] = {m: v[sub] for m, v in viewed.items()}
    return out


def run_real_robust(params: RealRobustParams, *,
                    embed: Callable[[list[str]], np.ndarray] | None = None) -> dict[str, Any]:
    """Fine-tune per seed and measure (module docstring); writes ``metrics.json``,
    ``summary.json`` (DVC metrics: the means only), ``history.json``, ``conclusions.json``,
    ``findings.md`` and ``report.md`` to ``out_dir``.
    ``embed``: the text tower for the views (:func:`view_features`)."""
    f = load_features(params.features)
    views = view_features(f, params.paraphrase_dir, embed=embed)
    kinds = view_kinds(f, params.paraphrase_dir)
    source = params.train_views or params.paraphrase_dir
    if params.train_views:  # the training split's view 2 from the other source (RealRobustParams)
        trained = view_features(f, params.train_views, embed=embed)["view2"]
        in_train = (f["split"][f["caption_clip_index"]] == "train")[:, None]
        views = {**views, "view2": np.where(in_train, trained, views["view2"])}
    train, val, test = (viewed_split(f, views, s, kinds) for s in ("train", "val", "test"))
    if not np.isfinite(train.views["view2"][:, 0]).any():
        raise InputError(f"{source}: no training caption has a view 2; nothing to fine-tune on")
    per_seed: dict[str, list[dict]] = {"base": [], "control": [], "robust": []}
    zero_shot: dict[str, list[np.ndarray]] = {s: [] for s in per_seed}
    labelled = _labelled_test(f)
    history = []
    for seed in params.seeds:
        base, _ = load_tower_clap(Path(params.base_model_dir) / f"seed_{seed}")
        base.eval()
        systems = {"base": base}
        for name, with_views in (("control", False), ("robust", True)):
            systems[name], hist = finetune(base, train, val.pairs, params, seed=seed, with_views=with_views)
            history += [{"seed": seed, "system": name, **h} for h in hist]
        for name, heads in systems.items():
            per_seed[name].append(measure(heads, test))
            if labelled is not None:
                zero_shot[name].append(label_accuracy(f, [heads], *labelled)[0])
        logger.info("real RobustCLAP seed %d: held-out t2a R@10 base %.4f control %.4f robust %.4f", seed,
                    *(per_seed[s][-1].get("heldout", {"r@10": np.zeros(1)})["r@10"].mean()
                      for s in ("base", "control", "robust")))
    metrics = _summarise(per_seed, params, test)
    if labelled is not None:
        rows, used = labelled
        positives = f["label_matrix"][rows][:, used]
        metrics["zero_shot"] = {"clips": len(rows), "labels": int(used.sum()),
                                "chance": round(float(np.mean(positives.sum(axis=1) / positives.shape[1])), 6),
                                **{s: round(float(np.mean(v)), 6) for s, v in zero_shot.items()},
                                **{f"{s}_per_seed": [round(float(a.mean()), 6) for a in v] for s, v in zero_shot.items()}}
    out = Path(params.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "metrics.json", metrics)
    write_json(out / "summary.json", summary(metrics))
    write_json(out / "history.json", history)
    findings = _findings(per_seed, params, zero_shot if labelled is not None else None)
    publish_findings(findings, out / "conclusions.json", out / "findings.md")
    (out / "report.md").write_text(report_markdown(metrics, findings))
    return metrics


def _summarise(per_seed: dict[str, list[dict]], params: RealRobustParams, test: ViewedSplit) -> dict[str, Any]:
    sets = list(per_seed["base"][0])
    out: dict[str, Any] = {"seeds": params.seeds, "test_clips": len(test.pairs.audio),
                           "queries": {s: len(per_seed["base"][0][s]["r@10"]) for s in sets}, "systems": {}}
    for system, runs in per_seed.items():
        block = {}
        for s in sets:
            for m in ("r@10", "map@10"):
                values = [float(r[s][m].mean()) for r in runs]
                block[f"{s}/t2a_{m}"] = round(float(np.mean(values)), 6)
                block[f"{s}/t2a_{m}_per_seed"] = [round(v, 6) for v in values]
        for name in [*VIEW_SETS, *(f"view2_{k}" for k in KINDS)]:
            if name in sets:
                block[f"{name}/drop_r@10"] = round(block[f"{name}_original/t2a_r@10"] - block[f"{name}/t2a_r@10"], 6)
        out["systems"][system] = block
    return out


def summary(metrics: dict[str, Any]) -> dict[str, Any]:
    """The DVC metrics file: each system's means over seeds, numbers only (``metrics.json``
    keeps the per-seed values and the query counts)."""
    zs = metrics.get("zero_shot") or {}
    return {system: {**{k: v for k, v in block.items() if not k.endswith("_per_seed")},
                     **({"zero_shot_accuracy": zs[system]} if system in zs else {})}
            for system, block in metrics["systems"].items()}


def _labelled_test(f: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
    """(rows, labels used) of the labelled test clips, or None when the features hold none."""
    if "label_matrix" not in f:
        return None
    rows = np.flatnonzero((f["split"] == "test") & f["label_matrix"].any(axis=1))
    return (rows, f["label_matrix"][rows].any(axis=0)) if len(rows) else None


def _findings(per_seed: dict[str, list[dict]], params: RealRobustParams,
              zero_shot: dict[str, list[np.ndarray]] | None = None) -> list[dict]:
    if len(params.seeds) < 2:
        logger.warning("real_robust: one seed says nothing about another run: no findings")
        return []

    def scores(system: str, query_set: str) -> SeedScores:
        return SeedScores(np.stack([r[query_set]["r@10"] for r in per_seed[system]]), tuple(params.seeds))

    sets, pre = per_seed["base"][0], params.name
    # The WordNet run's statements as they always were; another source names its views.
    heads = f"RobustCLAP's heads trained on {params.views_label} views" if params.train_views else "RobustCLAP's heads"
    specs = [(q, FindingSpec(id=f"{pre}.{q}_r10_vs_control", metric="t2a r@10", a="robust", b="control",
                             claim="greater", statement=f"On real captions' {what}, {heads} beat the "
                                                        "control fine-tune (t2a R@10)"))
             for q, what in (("heldout", "held-out WordNet view (words no training text holds)"),
                             ("view2", "WordNet view 2")) if q in sets]
    specs.append(("original", FindingSpec(id=f"{pre}.original_r10_not_less", metric="t2a r@10", a="robust",
                                          b="control", claim="not_less", margin=0.01,
                                          statement=f"On the original real captions, {heads} lose at most "
                                                    "0.01 t2a R@10 to the control fine-tune")))
    out = [evaluate_finding(spec, scores("robust", q), scores("control", q), paired_seeds=True,
                            n_resamples=params.n_resamples, confidence=params.confidence,
                            rng_seed=params.bootstrap_seed) for q, spec in specs]
    words = {"source": "nouns (the sound's source or event)", "action": "verbs"}
    for kind in KINDS:
        q = f"view2_{kind}"
        if q not in sets:
            continue
        drop = FindingSpec(id=f"{pre}.kinds.{kind}.base_drop", metric="t2a r@10", a="captions as written",
                           b="their view", claim="greater", statement=f"A WordNet view that changes only {words[kind]} "
                                                                     "costs the base tower CLAP t2a R@10")
        gain = FindingSpec(id=f"{pre}.kinds.{kind}.vs_control", metric="t2a r@10", a="robust", b="control",
                           claim="greater", statement=f"On WordNet views that change only {words[kind]}, {heads} "
                                                      "beat the control fine-tune (t2a R@10)")
        out += [evaluate_finding(spec, a, b, paired_seeds=True, n_resamples=params.n_resamples,
                                 confidence=params.confidence, rng_seed=params.bootstrap_seed)
                for spec, a, b in ((drop, scores("base", f"{q}_original"), scores("base", q)),
                                   (gain, scores("robust", q), scores("control", q)))]
    if zero_shot is not None:
        spec = FindingSpec(id=f"{pre}.zero_shot_not_less", metric="zero-shot accuracy", a="robust",
                           b="control", claim="not_less", margin=0.02,
                           statement=f"On the labelled real test clips, {heads} lose at most 0.02 "
                                     "zero-shot label accuracy to the control fine-tune")
        out.append(evaluate_finding(spec, SeedScores(np.stack(zero_shot["robust"]), tuple(params.seeds)),
                                    SeedScores(np.stack(zero_shot["control"]), tuple(params.seeds)),
                                    paired_seeds=True, n_resamples=params.n_resamples,
                                    confidence=params.confidence, rng_seed=params.bootstrap_seed))
    return out


def report_markdown(metrics: dict[str, Any], findings: list[dict]) -> str:
    """The study's table (mean over seeds) and its findings."""
    sets = [s for s in ("original", "view2_original", "view2", "heldout_original", "heldout")
            if f"{s}/t2a_r@10" in metrics["systems"]["base"]]
    lines = [f"Test: {metrics['test_clips']} clips; queries {metrics['queries']}; seeds {metrics['seeds']}. "
             "t2a R@10, mean over seeds.", "",
             "| system | " + " | ".join(sets) + " | view2 drop | heldout drop |",
             "|---|" + "---:|" * (len(sets) + 2)]
    for system, block in metrics["systems"].items():
        drops = [f"{block[k]:.4f}" if k in block else "–" for k in ("view2/drop_r@10", "heldout/drop_r@10")]
        lines.append(f"| {system} | " + " | ".join(f"{block[f'{s}/t2a_r@10']:.4f}" for s in sets)
                     + " | " + " | ".join(drops) + " |")
    kinds = [k for k in KINDS if f"view2_{k}/t2a_r@10" in metrics["systems"]["base"]]
    if kinds:
        lines += ["", "View 2 by the kind of word it changed (t2a R@10, mean over seeds; queries "
                  + ", ".join(f"{k} {metrics['queries'][f'view2_{k}']}" for k in kinds) + "):", "",
                  "| system | " + " | ".join(f"{k}: as written | {k}: view | {k}: drop" for k in kinds) + " |",
                  "|---|" + "---:|" * (3 * len(kinds))]
        for system, block in metrics["systems"].items():
            lines.append(f"| {system} | " + " | ".join(
                f"{block[f'view2_{k}_original/t2a_r@10']:.4f} | {block[f'view2_{k}/t2a_r@10']:.4f} | "
                f"{block[f'view2_{k}/drop_r@10']:.4f}" for k in kinds) + " |")
    zs = metrics.get("zero_shot")
    if zs:
        lines += ["", f"Zero-shot label accuracy on {zs['clips']} labelled test clips ({zs['labels']} labels, chance "
                  f"{zs['chance']:.3f}): " + ", ".join(f"{s} {zs[s]:.4f}" for s in metrics["systems"]) + "."]
    lines += ["", "| finding | effect [95% CI] | verdict |", "|---|---|---|"]
    lines += [f"| {f['statement']} | {f['effect']:+.4f} [{f['ci']['low']:+.4f}, {f['ci']['high']:+.4f}] | "
              f"{f['verdict']} |" for f in findings]
    return "\n".join(lines) + "\n"
