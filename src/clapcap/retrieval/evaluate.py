"""Step functions of retrieval evaluation: one call per CLI command, DVC stage or Prefect task.

- :func:`evaluate_file`: a dump -> the metrics JSON (with bootstrap intervals under ``ci``);
- :func:`compare_files`: two dumps of the same queries -> the paired bootstrap JSON;
- :func:`evaluate_all`: the ``retrieval`` params section -> one metrics file per dump.

The metric parity gate is :func:`clapcap.retrieval.parity.run_parity`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.data.dump import DumpError, dump_labels, load_dump, load_meta
from clapcap.retrieval.bootstrap import (
    DEFAULT_RESAMPLES,
    bootstrap_ci,
    check_same_queries,
    paired_bootstrap,
)
from clapcap.retrieval.config import RetrievalEvalParams
from clapcap.retrieval.metrics import (
    DEFAULT_BLOCK_BYTES,
    DEFAULT_KS,
    aggregate,
    metric_names,
    per_query_dump,
)
from clapcap.utils.io import write_json

logger = logging.getLogger(__name__)


def resolve_device(setting: str | None) -> str | None:
    """The device the retrieval metrics run on, from a compute setting.

    This is the one place where a compute device reaches retrieval evaluation: the step
    functions below take the setting as ``device`` and pass it through here (wire the
    ``compute`` params section, or ``CLAPCAP_DEVICE``, into their ``device`` argument).

    Args:
        setting: None or ``"cpu"``: numpy on the CPU (screened, the fastest CPU path);
            ``"auto"``: CUDA when torch sees one, else numpy on the CPU; ``"cuda"`` or
            ``"cuda:N"``: torch on that GPU.

    Returns:
        None for the numpy path, else the torch device string for
        :func:`clapcap.retrieval.metrics.per_query_dump`.

    Raises:
        RuntimeError: for ``cuda`` on a machine without CUDA (never a silent CPU fallback).
        ValueError: for any other setting.
    """
    if setting is None or setting == "cpu":
        return None
    if setting != "auto" and not (setting == "cuda" or setting.startswith("cuda:")):
        raise ValueError(f"retrieval device: expected auto, cpu, cuda or cuda:N, found {setting!r}")
    import torch  # deferred: seconds to import, and the CPU path does not need it

    if torch.cuda.is_available():
        return "cuda" if setting == "auto" else setting
    if setting == "auto":
        return None
    raise RuntimeError(f"retrieval device {setting!r}: CUDA is not available on this machine "
                       "(torch.cuda.is_available() is False); use 'auto' or 'cpu'")


def _ordered(direction_metrics: dict[str, float], ks: Sequence[int]) -> dict[str, float]:
    return {name: direction_metrics[name] for name in metric_names(ks)}


def evaluate_file(dump_path: str | Path, out_path: str | Path | None = None, *,
                  ks: Sequence[int] = DEFAULT_KS, laion_compatible: bool = False,
                  bootstrap: int = DEFAULT_RESAMPLES, seed: int = 0, confidence: float = 0.95,
                  max_block_bytes: int = DEFAULT_BLOCK_BYTES, device: str | None = None) -> dict:
    """Evaluate one dump and (when ``out_path`` is given) write the metrics JSON atomically.

    ``device`` is a compute setting (:func:`resolve_device`); it changes speed, not numbers.

    Returns:
        ``{"t2a": {...metrics..., "ci": {metric: {"low", "high"}}}, "a2t": {...}, "n_clips",
        "n_captions", "multi_positive"}``; ``ci`` only when ``bootstrap > 0``, and a
        ``"laion_compatible": true`` key only when that convention was used.

    Raises:
        FileNotFoundError: when the dump does not exist.
        DumpError: when the dump is invalid (shapes, NaN, empty, uncaptioned clip, ...).
        RuntimeError: when ``device`` asks for CUDA and there is none.
    """
    dump = load_dump(dump_path)
    pq = per_query_dump(dump, ks=ks, laion_compatible=laion_compatible,
                        max_block_bytes=max_block_bytes, origin=str(dump_path),
                        device=resolve_device(device))
    agg = aggregate(pq)
    result: dict = {d: _ordered(agg[d], ks) for d in ("t2a", "a2t")}
    # Every clip has a caption (validated), so fewer distinct clips than captions means
    # some clip has several.
    n_distinct = np.unique(dump.caption_clip_index).size
    result.update(n_clips=dump.n_clips, n_captions=dump.n_captions,
                  multi_positive=bool(n_distinct < dump.n_captions))
    if laion_compatible:
        result["laion_compatible"] = True
    if bootstrap > 0:
        ci = bootstrap_ci(pq, n_resamples=bootstrap, seed=seed, confidence=confidence)
        for direction in ("t2a", "a2t"):
            result[direction]["ci"] = {m: ci[direction][m] for m in metric_names(ks)}
    if out_path is not None:
        write_json(out_path, result)
    logger.info("%s: t2a mAP %.4f MRR %.4f | a2t mAP %.4f MRR %.4f", dump_path, result["t2a"]["map"],
                result["t2a"]["mrr"], result["a2t"]["map"], result["a2t"]["mrr"])
    return result


def compare_files(a_path: str | Path, b_path: str | Path, out_path: str | Path | None = None, *,
                  n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0, confidence: float = 0.95,
                  ks: Sequence[int] = DEFAULT_KS, laion_compatible: bool = False,
                  max_block_bytes: int = DEFAULT_BLOCK_BYTES, device: str | None = None) -> dict:
    """Paired bootstrap comparison of two dumps of the same queries (A - B).

    ``device`` is a compute setting (:func:`resolve_device`).

    Returns:
        ``{"a", "b", "n_resamples", "seed", "confidence", "t2a": {metric: {"a", "b",
        "difference", "ci", "p_value"}}, "a2t": {...}}``.

    Raises:
        FileNotFoundError: for a missing dump.
        DumpError: for an invalid dump or two dumps that do not hold the same queries.
    """
    dump_a, dump_b = load_dump(a_path), load_dump(b_path)
    check_same_queries(dump_a, dump_b, str(a_path), str(b_path))
    kwargs = dict(ks=ks, laion_compatible=laion_compatible, max_block_bytes=max_block_bytes,
                  device=resolve_device(device))
    pq_a = per_query_dump(dump_a, origin=str(a_path), **kwargs)
    pq_b = per_query_dump(dump_b, origin=str(b_path), **kwargs)
    test = paired_bootstrap(pq_a, pq_b, n_resamples=n_resamples, seed=seed, confidence=confidence)
    result = {"a": str(a_path), "b": str(b_path), "n_resamples": n_resamples, "seed": seed,
              "confidence": confidence}
    result.update({d: {m: test[d][m] for m in metric_names(ks)} for d in ("t2a", "a2t")})
    if out_path is not None:
        write_json(out_path, result)
    return result


def metrics_path(params: RetrievalEvalParams, dump_path: str | Path) -> Path:
    """Where :func:`evaluate_all` writes the metrics of ``dump_path``.

    ``<out_dir>/<label>.json`` with the label from :func:`dump_labels` over all dumps of
    ``params`` (``tiny__synth__test.json`` for ``data/embeddings/tiny/synth/test.npz``).

    Raises:
        ValueError: when ``dump_path`` is not one of ``params.dumps``.
    """
    if str(dump_path) not in params.dumps:
        raise ValueError(f"{dump_path} is not listed in retrieval.dumps")
    labels = dict(zip(params.dumps, dump_labels(params.dumps), strict=True))
    return Path(params.out_dir) / f"{labels[str(dump_path)]}.json"


def evaluate_all(params: RetrievalEvalParams, *, device: str | None = None) -> dict[str, dict]:
    """Evaluate every dump of the ``retrieval`` section.

    ``device`` is a compute setting (:func:`resolve_device`; None: numpy on the CPU).

    Returns:
        ``{dump path: metrics}``; each is also written to :func:`metrics_path`.

    Raises:
        ValueError: when ``params.dumps`` is empty; plus the errors of :func:`evaluate_file`.
    """
    if not params.dumps:
        raise ValueError("retrieval.dumps is empty: list the embedding dumps to evaluate")
    out = {}
    for dump_path in params.dumps:
        out[dump_path] = evaluate_file(
            dump_path, metrics_path(params, dump_path), ks=params.ks,
            laion_compatible=params.laion_compatible, bootstrap=params.n_resamples,
            seed=params.seed, confidence=params.confidence,
            max_block_bytes=params.max_block_mb * 2**20, device=device)
    return out


# The metric scope of a dump's split (its meta ``split``; docs/tracking.md): ``all``, the
# whole dataset (``clapcap retrieval embed --split all``), is the vocabulary's ``data``.
_SPLIT_SCOPES = {"train": "train", "val": "val", "test": "test", "all": "data"}


def tracking_scope(dump_path: str | Path) -> str:
    """The MLflow metric scope of a dump's metrics, from its meta ``split`` (``test`` when
    it has none): ``train``, ``val``, ``test``, or ``data`` for ``all``.

    Reads only the dump's meta, so a caller can check it before writing anything.

    Raises:
        FileNotFoundError / DumpError: for a missing or unreadable dump, or a split that
            has no scope (the message names the dump and the splits accepted).
    """
    return metric_scope(load_meta(dump_path), dump_path)


def metric_scope(meta: dict[str, Any], dump_path: str | Path) -> str:
    """The scope of a dump's metrics from its already-read ``meta`` (:func:`tracking_scope`)."""
    split = meta.get("split") or "test"
    if not isinstance(split, str) or split not in _SPLIT_SCOPES:
        raise DumpError(f"{dump_path}: meta split {split!r} has no MLflow metric scope; expected one "
                        f"of {list(_SPLIT_SCOPES)}")
    return _SPLIT_SCOPES[split]
