"""The ``robust_paraphrase`` step: give every caption of a dataset its two paraphrase views.

The output folder holds a manifest whose ``paraphrases_v1`` / ``paraphrases_v2`` columns
are aligned with ``captions`` (a view that the LLM failed to produce is ``null``), with the
held-out-vocabulary view ``paraphrases_heldout`` on ``heldout_splits`` (null elsewhere), a
``dataset.json`` pointing at the source audio root, and ``paraphrase_report.json``; the
``wordnet`` backend also writes each caption's changes (:data:`EDITS_FILE`).

The ``llm`` backend starts its inference engine when ``llm.engine`` names one
(:mod:`clapcap.llm.engine`), checks every view mechanically after the LLM's correction pass
(:mod:`clapcap.paraphrase.checks`), writes each view's status (``accepted``, ``corrected``,
``dropped``) and reason to ``view_records.json``, and the acceptance rates per view into the
report (``acceptance``). A dropped view is ``null`` in the manifest.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from clapcap.config import ConfigError
from clapcap.data.manifest import ManifestError, write_manifest
from clapcap.data.prepare import load_dataset
from clapcap.llm import LLMError
from clapcap.llm.engine import served
from clapcap.paraphrase.checks import corpus_events, mechanical_check, view_status
from clapcap.paraphrase.heldout import COLUMN as HELDOUT_COLUMN
from clapcap.paraphrase.heldout import heldout_views
from clapcap.paraphrase.heldout import words as heldout_words
from clapcap.paraphrase.llm import LLMParams, LLMParaphraser
from clapcap.paraphrase.wordnet import WordNet, lexical_edits, lexical_view
from clapcap.utils.io import read_json, write_json
from clapcap.utils.urls import redact_url

logger = logging.getLogger(__name__)

VIEW_COLUMNS = {"view1": "paraphrases_v1", "view2": "paraphrases_v2"}
# The wordnet backend's changes: clip id -> per caption its [old word, new word, part of speech]
# edits (empty: no view 2), read by real_robust to split view 2 by the kind of word it changed.
EDITS_FILE = "view2_edits.json"


@dataclass
class ParaphraseParams:
    """``params.yaml`` section ``robust_paraphrase``."""

    backend: Literal["corpus", "llm", "wordnet"] = "corpus"
    dataset_dir: str = "data/corpus"
    out_dir: str = "data/robust/paraphrased"
    splits: list[str] = field(default_factory=lambda: ["train", "val", "test"])
    # A subset: an int keeps the first n clips of the chosen splits (manifest order); a
    # mapping keeps the first n clips of each split it names (the others whole).
    max_clips: int | dict[str, int] | None = None
    # The first n captions of each clip (an int: every split; a mapping: the splits it names).
    captions_per_clip: int | dict[str, int] | None = None
    llm: LLMParams = field(default_factory=LLMParams)
    # Splits that get the held-out-vocabulary view (clapcap.paraphrase.heldout; corpus backend).
    heldout_splits: list[str] = field(default_factory=list)
    # The wordnet backend (clapcap.paraphrase.wordnet): view 2 only, WordNet synonyms and
    # hypernyms for at most this many words per caption (view 1 is null: no rule writes one).
    wordnet_dir: str = ".assets/wordnet/wordnet-base/usr/share/wordnet"
    wordnet_max_changes: int = 2
    track: bool = True
    experiment: str = "clapcap-robust"

    def __post_init__(self) -> None:
        if self.heldout_splits and self.backend == "llm":
            raise ConfigError("robust_paraphrase.heldout_splits: the held-out-vocabulary view rewrites the "
                              "corpus's view-2 lexicon or WordNet's, so it needs backend: corpus or wordnet "
                              "(set heldout_splits: [])")
        if self.wordnet_max_changes < 1:
            raise ConfigError(f"robust_paraphrase.wordnet_max_changes: expected >= 1, found {self.wordnet_max_changes}",
                              key="wordnet_max_changes")
        stray = sorted(set(self.heldout_splits) - set(self.splits))
        if stray:
            raise ConfigError(f"robust_paraphrase.heldout_splits: {stray} not in splits {self.splits}")
        if "train" in self.heldout_splits:
            raise ConfigError("robust_paraphrase.heldout_splits: not train (the view must stay unseen in training)")
        for key in ("max_clips", "captions_per_clip"):
            value = getattr(self, key)
            per_split = value if isinstance(value, dict) else {} if value is None else {"*": value}
            stray = sorted(set(per_split) - set(self.splits) - {"*"})
            if stray:
                raise ConfigError(f"robust_paraphrase.{key}: splits {stray} not in splits {self.splits}", key=key)
            bad = {k: v for k, v in per_split.items() if v < 1}
            if bad:
                raise ConfigError(f"robust_paraphrase.{key}: expected counts >= 1, found {bad}", key=key)


def check_views(df: pd.DataFrame, origin: str) -> dict[str, int]:
    """Check the view columns exist and are aligned with ``captions``.

    Returns:
        Per view, the number of captions that have a (non-null) paraphrase.

    Raises:
        ManifestError: naming ``origin``, the row and clip of the first misaligned list.
    """
    counts = {}
    for view, col in VIEW_COLUMNS.items():
        if col not in df.columns:
            raise ManifestError(f"{origin}: no {col} column; use the llm backend to create views")
        n = 0
        for i, (cid, caps, paras) in enumerate(zip(df["clip_id"], df["captions"], df[col], strict=True)):
            if not isinstance(paras, list) or len(paras) != len(caps):
                raise ManifestError(f"{origin}: row {i + 2} (clip {cid}): {col} must be a list aligned with "
                                    f"its {len(caps)} captions, found {paras!r}")
            n += sum(isinstance(p, str) and bool(p.strip()) for p in paras)
        counts[view] = n
    return counts


def _llm_views(df: pd.DataFrame, params: LLMParams, progress: bool,
               events: dict[str, list[str]] | None) -> tuple[pd.DataFrame, dict[str, Any]]:
    captions = [c for caps in df["captions"] for c in caps]
    with served(params.engine, params.base_url) as url:
        results = LLMParaphraser(replace(params, base_url=url)).paraphrase_many(captions, progress=progress)
    records = _view_records(results, events)
    out = df.copy()
    final = {(r["caption"], r["view"]): r["paraphrase"] if r["status"] != "dropped" else None for r in records}
    for view, col in VIEW_COLUMNS.items():
        out[col] = [[final[(c, view)] for c in caps] for caps in df["captions"]]
    failures = [{"caption": r.caption, "view": v, "error": e}
                for r in results.values() for v, e in r.errors.items()]
    if results and len(failures) == len(results) * len(VIEW_COLUMNS):
        raise LLMError(
            f"paraphrase: no usable output: all {len(failures)} views of {len(results)} unique "
            f"caption(s) failed (model {params.model} at {redact_url(params.base_url)}; first error: "
            f"{failures[0]['error'][:300]}). Failures are cached in {params.cache_path}: fix the "
            "endpoint or the prompt, then rerun with llm.retry_failed: true",
            reason="no usable output")
    stats = {"n_unique_captions": len(results), "n_failed_views": len(failures),
             "n_rewritten_views": sum(sum(r.rewritten.values()) for r in results.values()),
             "failures": failures[:200], "acceptance": acceptance(records),
             "event_check": events is not None}
    return out, {**stats, "records": records}


def _view_records(results: dict[str, Any], events: dict[str, list[str]] | None) -> list[dict[str, Any]]:
    """One record per (unique caption, view): the view, its status and why (``checks.view_status``)."""
    records = []
    for caption, res in results.items():
        for view in VIEW_COLUMNS:
            text = res.views.get(view)
            check = mechanical_check(caption, text, events, view) if text is not None else None
            status, reason = view_status(text, res.rewritten.get(view, False), res.errors.get(view), check)
            records.append({"caption": caption, "view": view, "paraphrase": text, "status": status,
                            "reason": reason})
    return records


def acceptance(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per view and overall: the count and rate of each status, and the drop reasons' counts
    (a reason is grouped by its first words: ``check: new sound event(s)``, ``generate``, ...)."""
    out: dict[str, Any] = {}
    for view in (*VIEW_COLUMNS, "all"):
        rows = [r for r in records if view in ("all", r["view"])]
        n = len(rows)
        counts = {s: sum(r["status"] == s for r in rows) for s in ("accepted", "corrected", "dropped")}
        reasons: dict[str, int] = {}
        for r in rows:
            if r["status"] == "dropped":
                key = r["reason"].split(":")[0] if not r["reason"].startswith("check:") else \
                    "check: " + r["reason"].split(":")[1].strip().split(" ")[0]
                reasons[key] = reasons.get(key, 0) + 1
        out[view] = {"n": n, **counts, **{f"{s}_rate": round(c / n, 6) if n else None for s, c in counts.items()},
                     "kept_rate": round((counts["accepted"] + counts["corrected"]) / n, 6) if n else None,
                     "drop_reasons": dict(sorted(reasons.items()))}
    return out


def _add_heldout(df: pd.DataFrame, full: pd.DataFrame, splits: list[str]) -> dict[str, Any]:
    """Add the held-out view column to ``df``'s rows of ``splits`` (None elsewhere), checked
    against every training caption and view of the whole manifest ``full``."""
    train = full[full["split"] == "train"]
    texts = [t for col in ("captions", *VIEW_COLUMNS.values()) for caps in train[col] for t in (caps or [])]
    chosen = df["split"].isin(splits).to_numpy()
    views, stats = heldout_views([v if keep else None for v, keep in zip(df["paraphrases_v2"], chosen, strict=True)],
                                 texts)
    df[HELDOUT_COLUMN] = views
    logger.info("held-out view: %d captions (%s), %d substitute words, none in %d training words",
                stats["n_captions"], ", ".join(splits), stats["n_substitute_words"], stats["n_training_words"])
    return {"splits": list(splits), **stats}


def _wordnet_views(df: pd.DataFrame, wn: WordNet, max_changes: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    """View 2 from WordNet for every caption (None where no word can change); view 1 null.
    The stats' ``edits`` hold each caption's changes (:data:`EDITS_FILE`)."""
    out = df.copy()
    views = [[lexical_edits(c, wn, max_changes=max_changes) for c in caps] for caps in df["captions"]]
    out["paraphrases_v1"] = [[None] * len(caps) for caps in df["captions"]]
    out["paraphrases_v2"] = [[v for v, _ in row] for row in views]
    edits = {str(cid): [[list(e) for e in ch] for _, ch in row] for cid, row in zip(df["clip_id"], views, strict=True)}
    changed = [f"{old}->{new}" for row in views for _, ch in row for old, new, _ in ch]
    n_caps = sum(len(row) for row in views)
    n_views = sum(v is not None for row in views for v, _ in row)
    logger.info("wordnet view 2: %d of %d captions changed, %d words", n_views, n_caps, len(changed))
    return out, {"wordnet": {"n_captions": n_caps, "n_views": n_views, "n_changed_words": len(changed),
                             "examples": sorted(set(changed))[:40]}, "edits": edits}


def _wordnet_heldout(df: pd.DataFrame, wn: WordNet, params: ParaphraseParams) -> dict[str, Any]:
    """The held-out view of ``heldout_splits``' captions: WordNet replacements that are no word
    of any training caption or training view in ``df`` (None where no word can change)."""
    train = df[df["split"] == "train"]
    if train.empty:
        raise ValueError("held-out view: no training clip in robust_paraphrase.splits; the held-out words are "
                         "chosen against the training captions and views, so add train to splits")
    seen = frozenset(w for col in ("captions", *VIEW_COLUMNS.values()) for caps in train[col]
                     for t in (caps or []) if t for w in heldout_words(t))
    # The view replaces letter runs, so the parts of a hyphenated training word ("mid-range")
    # are avoided too: "range" -> "chain" must not make a "mid-chain" that training has.
    avoid = seen | {p for w in seen for p in re.split(r"[-']", w) if p}
    chosen = df["split"].isin(params.heldout_splits).to_numpy()
    views = [[lexical_view(c, wn, max_changes=params.wordnet_max_changes, avoid=avoid)[0] for c in caps] if keep
             else None for caps, keep in zip(df["captions"], chosen, strict=True)]
    df[HELDOUT_COLUMN] = views
    new = {w for row in views if row for v in row if v for w in heldout_words(v)} - {
        w for caps, keep in zip(df["captions"], chosen, strict=True) if keep for c in caps for w in heldout_words(c)}
    leaked = sorted(new & seen)
    if leaked:  # lexical_view avoids them; a failure here is a bug, not data
        raise AssertionError(f"held-out view: substitute word(s) {leaked[:10]} occur in the training texts")
    n = sum(v is not None for row in views if row for v in row)
    logger.info("held-out view (wordnet): %d captions, %d substitute words, none in %d training words",
                n, len(new), len(seen))
    return {"splits": list(params.heldout_splits), "n_captions": n, "n_substitute_words": len(new),
            "n_training_words": len(seen)}


def select_subset(manifest: pd.DataFrame, params: ParaphraseParams) -> pd.DataFrame:
    """The rows of ``params.splits`` that ``max_clips`` keeps, each with the captions that
    ``captions_per_clip`` keeps (manifest order throughout)."""
    df = manifest[manifest["split"].isin(params.splits)].reset_index(drop=True)
    if isinstance(params.max_clips, int):
        df = df.iloc[: params.max_clips]
    elif params.max_clips:
        rank = df.groupby("split").cumcount()
        limit = df["split"].map(params.max_clips)
        df = df[limit.isna() | (rank < limit)]
    df = df.reset_index(drop=True)
    keep = params.captions_per_clip
    if keep is not None:
        per_row = [keep if isinstance(keep, int) else keep.get(split) for split in df["split"]]
        df = df.copy()
        for col in ("captions", *VIEW_COLUMNS.values()):
            if col in df.columns:
                df[col] = [v if n is None or not isinstance(v, list) else v[:n]
                           for v, n in zip(df[col], per_row, strict=True)]
    return df


def paraphrase_dataset(params: ParaphraseParams, *, progress: bool = True) -> dict[str, Any]:
    """Write the paraphrased manifest for ``params.splits`` of ``params.dataset_dir``.

    Returns:
        The report (also written to ``out_dir/paraphrase_report.json``).

    Raises:
        ManifestError: when the corpus backend finds missing or misaligned views.
        LLMError: when the LLM endpoint keeps failing (rerun to resume from the cache), or
            when every view failed (no usable output; nothing is written). Some failed
            views are not an error: they are ``null`` and counted in the report.
    """
    ds = load_dataset(params.dataset_dir)
    df = select_subset(ds.manifest, params)
    if df.empty:
        raise ValueError(f"{params.dataset_dir}: no clips in splits {params.splits}")
    stats: dict[str, Any] = {}
    records: list[dict[str, Any]] = []
    if params.backend == "llm":
        synthetic = read_json(Path(params.dataset_dir) / "dataset.json").get("source") == "synthetic"
        df, stats = _llm_views(df, params.llm, progress, corpus_events() if synthetic else None)
        records = stats.pop("records")
    wn = WordNet(params.wordnet_dir) if params.backend == "wordnet" else None
    out_dir = Path(params.out_dir)
    if wn is not None:
        df, stats = _wordnet_views(df, wn, params.wordnet_max_changes)
        write_json(out_dir / EDITS_FILE, stats.pop("edits"))
    counts = check_views(df, f"{params.dataset_dir}/manifest.csv")
    if params.heldout_splits and wn is not None:
        stats["heldout"] = _wordnet_heldout(df, wn, params)
    elif params.heldout_splits:
        stats["heldout"] = _add_heldout(df, ds.manifest, params.heldout_splits)
    write_manifest(df, out_dir / "manifest.csv")
    # The audio root relative to out_dir: no absolute path in a DVC output (bytes depend on
    # content only, not on where the repository was cloned); load_dataset resolves it.
    root = Path(os.path.relpath(ds.root.resolve(), out_dir.resolve())).as_posix()
    write_json(out_dir / "dataset.json", {"root": root, "source": f"paraphrased:{params.backend}",
                                          "n_clips": len(df)})
    n_caps = int(sum(len(c) for c in df["captions"]))
    by_split = {split: {"n_clips": int((df["split"] == split).sum()),
                        "n_captions": int(sum(len(c) for c in df.loc[df["split"] == split, "captions"]))}
                for split in params.splits}
    if records:  # the acceptance rates of each split's captions
        for split in params.splits:
            caps = {c for caps in df.loc[df["split"] == split, "captions"] for c in caps}
            by_split[split]["acceptance"] = acceptance([r for r in records if r["caption"] in caps])
    report: dict[str, Any] = {"backend": params.backend, "n_clips": len(df), "n_captions": n_caps}
    if params.max_clips is not None or params.captions_per_clip is not None or records:
        report["subset"] = {"max_clips": params.max_clips, "captions_per_clip": params.captions_per_clip,
                            "splits": by_split}
    report.update({"n_views": counts, **stats})
    write_json(out_dir / "paraphrase_report.json", report)
    if records:  # every LLM view, its status and why: what the acceptance rates count
        write_json(out_dir / "view_records.json", records)
    logger.info("paraphrases (%s): %d clips, %d captions, views %s -> %s", params.backend, len(df),
                n_caps, counts, out_dir)
    return report


def corpus_views_missing(params: ParaphraseParams) -> str | None:
    """Why the corpus backend cannot run on ``params.dataset_dir``, or None when it can: only
    the synthetic corpus writes views; a real dataset needs the llm or the wordnet backend."""
    if params.backend != "corpus":
        return None
    info = read_json(Path(params.dataset_dir) / "dataset.json")
    columns = set(load_dataset(params.dataset_dir).manifest.columns)
    if info.get("source") == "synthetic" or set(VIEW_COLUMNS.values()) <= columns:
        return None
    return (f"{params.dataset_dir} is a {info.get('source')!r} dataset without paraphrase views (only the synthetic "
            "corpus has them); set robust_paraphrase.backend: llm to make them with an LLM, or wordnet for "
            "a lexical view 2 from WordNet")
