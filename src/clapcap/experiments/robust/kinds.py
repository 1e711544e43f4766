"""Which linguistic change hurts retrieval: sound-event words, attribute words or sentence structure.

The RobustCLAP paper's Table 2 splits paraphrase robustness by what a paraphrase changes. The
embedded corpus knows which of a caption's words name sound events and which name attributes:
every content word comes from the ``TRAIN`` lexicon of :mod:`clapcap.data.synth_text`, keyed by
the concept it names, and the clip's ``meta.events`` list the concepts. From each test caption
(event-sound clips; the music clips' long captions use other words and are left out) this
module writes, aligned with the captions:

- ``paraphrases_events``: every sound-event word replaced by its ``VIEW2`` counterpart (the same
  position in the concept's word list), the rest of the caption unchanged;
- ``paraphrases_attributes``: every attribute word (loudness, pitch, repetition, tempo, key,
  timbre) replaced the same way, event words unchanged;
- the corpus's own view 1 (``paraphrases_v1``) changes only the sentence structure, and
  view 2 changes everything.

Replacement is by whole words, longest phrase first, among the phrases of the concepts the
clip has; "a"/"an" are then fixed to the next word. Then, for the base CLAP, the
captions-only control and RobustCLAP over fine-tune seeds (the models of ``robust_seeds``),
per-query t2a R@10 on each view, and findings over seeds and queries
(:mod:`clapcap.evaluation.seed_bootstrap`): the base CLAP's drop per kind, whether event words
hurt it more than attribute words, and whether RobustCLAP's drop per kind is smaller than the
base's and the control's.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clapcap.compute import Compute, or_default
from clapcap.data.manifest import write_manifest
from clapcap.data.prepare import load_dataset
from clapcap.data.synth_text import LABELS, TRAIN, VIEW2
from clapcap.evaluation.conclusions import FindingSpec, evaluate_finding, publish_findings
from clapcap.evaluation.seed_bootstrap import SeedScores
from clapcap.experiments.captioning.scores import mean_interval
from clapcap.experiments.robust.benchmark import evaluate_model, load_waves, sample_rate_of
from clapcap.experiments.robust.config import RobustBenchParams, RobustSeedParams
from clapcap.experiments.robust.seeds import seed_model_dirs
from clapcap.robust.config import RobustTrainParams
from clapcap.utils.io import write_json

logger = logging.getLogger(__name__)

EVENT_CONCEPTS = frozenset(LABELS)
ATTRIBUTE_FIELDS = ("loudness", "pitch", "repetition", "tempo", "key", "timbre")
KINDS = {"events": "paraphrases_events", "attributes": "paraphrases_attributes", "structure": "paraphrases_v1"}
KIND_TEXT = {"events": "only its sound-event words", "attributes": "only its attribute words",
             "structure": "only its sentence structure"}


def clip_concepts(meta: dict[str, Any]) -> dict[str, set[str]]:
    """The clip's event concepts and attribute concepts, from its ``meta.events``."""
    events, attrs = set(), set()
    for ev in meta.get("events", []):
        events.add(ev["kind"])
        attrs.update(ev[f] for f in ATTRIBUTE_FIELDS if ev.get(f))
    return {"events": events, "attributes": attrs}


def _fix_articles(text: str) -> str:
    text = re.sub(r"\b([Aa])n? (?=[aeiouAEIOU])", lambda m: m.group(1) + "n ", text)
    return re.sub(r"\b([Aa])n (?=[^aeiouAEIOU\W])", lambda m: m.group(1) + " ", text)


def substitute(caption: str, concepts: set[str]) -> tuple[str, int]:
    """``caption`` with each ``TRAIN`` phrase of ``concepts`` replaced by its ``VIEW2``
    counterpart. Returns ``(text, n_replaced)``."""
    pairs = {}
    for concept in concepts:
        for j, phrase in enumerate(TRAIN[concept]):
            pairs[phrase] = VIEW2[concept][j % len(VIEW2[concept])]
    if not pairs:
        return caption, 0
    pattern = re.compile(r"\b(" + "|".join(re.escape(p) for p in sorted(pairs, key=len, reverse=True)) + r")\b",
                         re.IGNORECASE)
    count = 0

    def swap(m: re.Match[str]) -> str:
        nonlocal count
        count += 1
        new = pairs[m.group(1).lower()]
        return new[:1].upper() + new[1:] if m.group(1)[:1].isupper() else new

    out = pattern.sub(swap, caption)
    return _fix_articles(out), count


def kind_views(df: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The event-sound clips of ``df`` with ``paraphrases_events`` and ``paraphrases_attributes`` added;
    counts of what was replaced."""
    rows, stats = [], {"clips": 0, "captions": 0, "unchanged": {"events": 0, "attributes": 0},
                       "left_out_music": 0}
    for _, row in df.iterrows():
        meta = row.get("meta") if isinstance(row.get("meta"), dict) else {}
        if "aspect_list" in meta or not meta.get("events"):
            stats["left_out_music"] += 1
            continue
        concepts = clip_concepts(meta)
        new = row.to_dict()
        for kind in ("events", "attributes"):
            texts = []
            for caption in row["captions"]:
                text, n = substitute(caption, concepts[kind])
                stats["unchanged"][kind] += n == 0
                texts.append(text)
            new[KINDS[kind]] = texts
        stats["clips"] += 1
        stats["captions"] += len(row["captions"])
        rows.append(new)
    if not rows:
        raise ValueError("no event-sound clip with meta.events: the kind views need the synthetic corpus")
    return pd.DataFrame(rows).reset_index(drop=True), stats


@dataclass
class KindStudyParams:
    """``params.yaml`` section ``robust_kinds``."""

    split: str = "test"
    views_dir: str = "data/robust/kinds"
    out_dir: str = "results/robust/kinds"
    conclusions: str = "results/robust/kinds/conclusions.json"
    findings_md: str = "results/robust/kinds/findings.md"
    metric: str = "r@10"


def write_kind_views(bench: RobustBenchParams, params: KindStudyParams) -> dict[str, Any]:
    """Write the views manifest (``views_dir``) for ``params.split`` of the paraphrased corpus."""
    ds = load_dataset(bench.paraphrase_dir)
    df, stats = kind_views(ds.split(params.split))
    out = Path(params.views_dir)
    write_manifest(df, out / "manifest.csv")
    root = Path(os.path.relpath(ds.root.resolve(), out.resolve())).as_posix()
    write_json(out / "dataset.json", {"root": root, "source": "paraphrased:kinds", "n_clips": len(df), **stats})
    return stats


def _per_query(pq: dict[str, Any], kind: str, metric: str) -> np.ndarray:
    return np.asarray(pq[kind]["t2a"][metric], dtype=np.float64)


def run_kind_study(bench: RobustBenchParams, study: RobustSeedParams, train: RobustTrainParams,
                   control: RobustTrainParams, params: KindStudyParams, *,
                   compute: Compute | None = None) -> dict[str, Any]:
    """Write the views, score every model on them, test the findings; write ``kinds.json``,
    the conclusions and the findings table under ``params.out_dir``.

    Returns:
        The result written to ``<out_dir>/kinds.json``.
    """
    compute = or_default(compute)
    view_stats = write_kind_views(bench, params)
    scoring = replace(bench, paraphrase_dir=params.views_dir, out_dir=params.out_dir, split=params.split,
                      benchmarks={"original": "captions", **{k: c for k, c in KINDS.items()}},
                      n_resamples=10)  # per-model CIs unused: the findings carry the intervals
    df = load_dataset(params.views_dir).split(params.split)
    waves, _ = load_waves(params.views_dir, params.split, sample_rate_of(scoring))
    roles = {"base": {0: bench.models[bench.base]},
             "candidate": seed_model_dirs(train, study, "candidate"),
             "control": seed_model_dirs(control, study, "control")}
    pqs = {role: {s: evaluate_model(f"{role}_seed{s}", d, df, waves, scoring, compute=compute)[0]
                  for s, d in dirs.items()} for role, dirs in roles.items()}
    m = params.metric

    def scores(role: str, kind: str, minus_original: bool = False) -> SeedScores:
        seeds = sorted(pqs[role])
        rows = [_per_query(pqs[role][s], kind, m) - (_per_query(pqs[role][s], "original", m) if minus_original else 0)
                for s in seeds]
        return SeedScores(np.stack(rows), tuple(seeds), noise_floor=0.0 if role == "base" else None)

    names = {"base": bench.base, "candidate": bench.candidate, "control": study.control}
    findings = []
    for kind in KINDS:
        findings.append(evaluate_finding(
            FindingSpec(id=f"robust.kinds.{kind}.base_drop", statement=f"changing {KIND_TEXT[kind]} lowers the "
                        f"base CLAP's t2a {m.upper()}", metric=f"{kind}/t2a/{m}", a=f"{bench.base} ({kind} view)",
                        b=f"{bench.base} (original)", claim="less"),
            scores("base", kind), scores("base", "original"),
            n_resamples=study.n_resamples, confidence=study.confidence))
        for other in ("base", "control"):
            findings.append(evaluate_finding(
                FindingSpec(id=f"robust.kinds.{kind}.drop_vs_{other}",
                            statement=f"RobustCLAP loses less t2a {m.upper()} than {names[other]} when a caption changes "
                                      f"{KIND_TEXT[kind]}", metric=f"{kind}-original/t2a/{m}",
                            a=bench.candidate, b=names[other], claim="greater"),
                scores("candidate", kind, True), scores(other, kind, True), paired_seeds=other == "control",
                n_resamples=study.n_resamples, confidence=study.confidence))
    findings.append(evaluate_finding(
        FindingSpec(id="robust.kinds.events_vs_attributes.base", statement="sound-event words matter more than "
                    f"attribute words to the base CLAP: its t2a {m.upper()} is lower with event words changed than "
                    "with attribute words changed", metric=f"events-attributes/t2a/{m}",
                    a=f"{bench.base} (events view)", b=f"{bench.base} (attributes view)", claim="less"),
        scores("base", "events"), scores("base", "attributes"),
        n_resamples=study.n_resamples, confidence=study.confidence))
    result: dict[str, Any] = {"metric": f"t2a/{m}", "split": params.split, "views": view_stats,
                              "n_queries": int(scores("base", "original").values.shape[1]), "models": {}}
    for role, by_seed in pqs.items():
        entry: dict[str, Any] = {}
        for kind in ["original", *KINDS]:
            per_seed = {str(s): float(_per_query(by_seed[s], kind, m).mean()) for s in sorted(by_seed)}
            entry[kind] = {"mean": float(np.mean(list(per_seed.values()))), "per_seed": per_seed}
            if kind != "original":  # the drop, its interval over queries of the seed-mean drop
                drop = scores(role, kind, True).values.mean(axis=0)
                entry[kind]["drop"] = float(drop.mean())
                entry[kind]["drop_ci"] = mean_interval(drop, n_resamples=study.n_resamples, seed=0,
                                                      confidence=study.confidence)
        result["models"][names[role]] = entry
    write_json(Path(params.out_dir) / "kinds.json", result)
    publish_findings(findings, params.conclusions, params.findings_md)
    return result
