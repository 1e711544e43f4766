"""Generate (or import) one reference captioner's predictions on the shared split.

Output, under ``out_dir/<name>/``: ``progress.jsonl`` (per-clip cache, see
:func:`progress_cache`) and ``predictions.json`` (``{clip_id: caption}``,
written atomically when every clip is done). A finished reference is skipped by its
predictions file; an interrupted one resumes from its progress cache.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from tqdm import tqdm

from clapcap.compute import Compute
from clapcap.evaluation.captioning_metrics import check_caption_inputs
from clapcap.evaluation.leakage import LeakageParams
from clapcap.evaluation.shared_split import (
    ReferenceSplit,
    dump_split,
    read_split_json,
    score_reference,
)
from clapcap.llm.jsonl import ResumeCache
from clapcap.reference.api import ApiCaptioner
from clapcap.reference.config import ReferenceParams, ReferenceSpec
from clapcap.reference.hf_local import HFLocalCaptioner
from clapcap.utils.io import read_json, write_json

logger = logging.getLogger(__name__)

BatchCaptioner = Callable[[list[str]], list[str]]


def progress_cache(path: str | Path) -> ResumeCache:
    """The per-clip progress cache: one ``{"clip_id", "caption"}`` line per finished clip.

    Each line is synced before the next clip starts, so an interrupted or rate-limited run
    loses at most the clip in flight; a rerun skips finished clips (a ``kill -9`` test
    checks it). A line torn by a crash, or without a clip id and a text caption, is
    ignored with a warning and its clip redone (:mod:`clapcap.llm.jsonl`).
    """
    return ResumeCache(path, "clip_id", text_fields=("caption",))


def predictions_path(out_dir: str | Path, name: str) -> Path:
    """Where reference ``name``'s predictions JSON lives."""
    return Path(out_dir) / name / "predictions.json"


def import_predictions(src: str | Path, split: ReferenceSplit, dst: str | Path) -> Path:
    """Check a ``{clip_id: caption}`` JSON made elsewhere against the split and copy it.

    Also accepts a list of ``{"clip_id", "caption"}`` records.

    Raises:
        ValueError: naming the file and the ids on a bad format, missing or extra ids, or
            empty captions.
    """

    data = read_json(src)
    if isinstance(data, list):
        try:
            data = {str(r["clip_id"]): r["caption"] for r in data}
        except (KeyError, TypeError) as err:
            raise ValueError(f"{src}: expected {{clip_id: caption}} or a list of "
                             f"{{'clip_id', 'caption'}} records, found an entry without {err}") from err
    try:
        check_caption_inputs(data, split.references)
    except ValueError as err:
        raise ValueError(f"{src}: {err}") from err
    return write_json(dst, {c.clip_id: data[c.clip_id] for c in split.clips})


def make_captioner(spec: ReferenceSpec, compute: Compute | None = None) -> BatchCaptioner:
    """The batch captioning function of a generating backend (a local model on ``compute.device``)."""
    if spec.backend == "hf_local":

        return HFLocalCaptioner(spec.hf, spec.generation, compute=compute).caption_batch
    if spec.backend == "openai_api":

        api = ApiCaptioner(spec.api, spec.generation)
        return lambda paths: [api.caption(p) for p in paths]
    raise ValueError(f"reference {spec.name}: backend {spec.backend!r} does not generate")


def run_captioner(captioner: BatchCaptioner, split: ReferenceSplit, cache: ResumeCache, *,
                  batch_size: int = 1, progress: bool = True) -> dict[str, str]:
    """Caption every clip not yet in ``cache``, recording each batch as soon as it is done.

    Returns:
        ``{clip_id: caption}`` for the whole split, in split order.
    """
    todo = [c for c in split.clips if c.clip_id not in cache]
    logger.info("%d clip(s) to caption, %d cached", len(todo), len(split.clips) - len(todo))
    bar = tqdm(total=len(todo), disable=not progress, desc="captioning", unit="clip")
    for start in range(0, len(todo), max(1, batch_size)):
        batch = todo[start: start + max(1, batch_size)]
        captions = captioner([c.audio_path for c in batch])
        if len(captions) != len(batch):
            raise RuntimeError(f"captioner returned {len(captions)} captions for {len(batch)} clips")
        for clip, caption in zip(batch, captions, strict=True):
            cache.put({"clip_id": clip.clip_id, "caption": caption})
        bar.update(len(batch))
    bar.close()
    return {c.clip_id: cache[c.clip_id]["caption"] for c in split.clips}


def generate_reference(spec: ReferenceSpec, split_json: str | Path, out_dir: str | Path, *,
                       captioner: BatchCaptioner | None = None, progress: bool = True,
                       compute: Compute | None = None) -> Path:
    """Produce ``out_dir/<name>/predictions.json`` for one reference (skip when it exists).

    ``captioner`` overrides the backend's (for tests and custom models).

    Returns:
        The predictions path.

    Raises:
        ValueError / FileNotFoundError: on a bad split, spec or imported file.
    """
    dst = predictions_path(out_dir, spec.name)
    if dst.is_file():
        logger.info("%s exists, skipping generation of %s", dst, spec.name)
        return dst
    split = read_split_json(split_json)
    if spec.backend == "import" and captioner is None:
        if not spec.predictions_file:
            raise ValueError(f"reference {spec.name}: backend 'import' needs predictions_file")
        return import_predictions(spec.predictions_file, split, dst)
    cache = progress_cache(dst.parent / "progress.jsonl")
    if any(c.clip_id not in cache for c in split.clips):
        captioner = captioner or make_captioner(spec, compute)
    # An API request captions one clip: record each answer at once, so a kill repeats at
    # most the one paid call in flight (batch_size is for local models).
    batch_size = 1 if spec.backend == "openai_api" else spec.generation.batch_size
    preds = run_captioner(captioner, split, cache, batch_size=batch_size, progress=progress)
    return write_json(dst, preds)


def scores_path(out_dir: str | Path, name: str) -> Path:
    """Where reference ``name``'s scores JSON lives."""
    return Path(out_dir) / name / "scores.json"


def run_reference(spec: ReferenceSpec, split_dir: str | Path, out_dir: str | Path, *,
                  metrics: list[str] | None = None, leakage: LeakageParams | None = None,
                  progress: bool = False, compute: Compute | None = None) -> Path:
    """Generate (or import) then score one reference; skipped when its scores file exists.
    A local model runs on ``compute.device``.

    Returns:
        The path of ``out_dir/<name>/scores.json``.
    """

    dst = scores_path(out_dir, spec.name)
    if dst.is_file():
        logger.info("%s exists, skipping %s", dst, spec.name)
        return dst
    split_dir = Path(split_dir)
    preds = generate_reference(spec, split_dir / "split.json", out_dir, progress=progress, compute=compute)
    score_reference(preds, split_dir / "split.csv", spec.name, out_path=dst,
                    held_out_name=spec.held_out_name, trim_words=spec.trim_words,
                    trim_sentences=spec.trim_sentences, metrics=metrics, leakage=leakage)
    return dst


def run_all_references(params: ReferenceParams, *, compute: Compute | None = None) -> dict[str, Path]:
    """Dump the split if needed, run every configured reference in turn (DVC stage), and
    write ``out_dir/summary.json`` (per reference: leakage verdict and the reportable row).

    Returns:
        ``{reference name: scores path}``.
    """

    split_dir = Path(params.split_dir)
    if not ((split_dir / "split.csv").is_file() and (split_dir / "split.json").is_file()):
        dump_split(params.dataset_dir, split_dir, split=params.split)
    paths = {spec.name: run_reference(spec, split_dir, params.out_dir, metrics=params.metrics,
                                      leakage=params.leakage, compute=compute) for spec in params.references}
    summary = {}
    for name, path in paths.items():
        scores = read_json(path)
        summary[name] = {"scores": str(path), "primary": scores["primary"],
                         "leakage": scores["leakage"]["verdict"], "reportable": scores["reportable"]}
    write_json(Path(params.out_dir) / "summary.json", summary)
    return paths
