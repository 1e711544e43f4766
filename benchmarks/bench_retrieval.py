"""Benchmark (not a test): clapcap's retrieval metrics against ranx and torchmetrics.

All three get the same similarity matrices, and every ratio is measured in this run:

- clapcap ``matrix``: :func:`retrieval_metrics` on the precomputed (n_captions, n_clips)
  matrix (both directions);
- clapcap ``dump``: :func:`evaluate_dump` from embeddings, computing similarities block by
  block (the chunked path; peak traced memory is printed);
- ranx: ``Qrels``/``Run`` built from the matrix, then ``evaluate`` (hit_rate@1/5/10, map,
  map@10, mrr), both directions; building and evaluating are timed together;
- torchmetrics: ``retrieval_hit_rate``, ``retrieval_average_precision`` (full and top 10)
  and ``retrieval_reciprocal_rank`` per query, both directions.

At sizes where the reference tools cannot hold every query (10k x 50k is 5e8 scores), they
are timed on the first ``--ref-queries`` queries of each direction and scaled linearly to
all queries; such rows say "extrapolated".

Usage::

    python benchmarks/bench_retrieval.py --sizes 1000x5000            # small, ~1-2 min
    python benchmarks/bench_retrieval.py --sizes 1000x5000,10000x50000
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
import warnings

import numpy as np

from clapcap.data.dump import EmbeddingDump
from clapcap.retrieval.metrics import evaluate_dump, retrieval_metrics

KS = (1, 5, 10)


def make_dump(n_clips: int, n_captions: int, dim: int, seed: int) -> EmbeddingDump:
    rng = np.random.default_rng(seed)
    audio = rng.normal(size=(n_clips, dim)).astype(np.float32)
    idx = np.sort(np.arange(n_captions) % n_clips)
    text = (audio[idx] + 2.0 * rng.normal(size=(n_captions, dim))).astype(np.float32)
    return EmbeddingDump(audio, text, idx, [f"c{i}" for i in range(n_clips)],
                         [f"t{j}" for j in range(n_captions)])


def unit(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def queries(dump: EmbeddingDump, direction: str, limit: int | None):
    """(scores (n_q, n_docs), positives per query) for the first ``limit`` queries."""
    a, t, idx = unit(dump.audio_embeds), unit(dump.text_embeds), dump.caption_clip_index
    if direction == "t2a":
        n = t.shape[0] if limit is None else min(limit, t.shape[0])
        return (t[:n] @ a.T).astype(np.float32), [[int(idx[q])] for q in range(n)]
    n = a.shape[0] if limit is None else min(limit, a.shape[0])
    return (a[:n] @ t.T).astype(np.float32), [list(np.flatnonzero(idx == c)) for c in range(n)]


def time_ranx(scores: np.ndarray, positives: list[list[int]]) -> float:
    from ranx import Qrels, Run, evaluate

    start = time.perf_counter()
    qrels = Qrels({f"q{q}": {f"d{d}": 1 for d in pos} for q, pos in enumerate(positives)})
    run = Run({f"q{q}": dict(zip([f"d{d}" for d in range(row.size)], row.tolist(), strict=True))
               for q, row in enumerate(scores)})
    evaluate(qrels, run, [f"hit_rate@{k}" for k in KS] + ["map", "map@10", "mrr"], make_comparable=True)
    return time.perf_counter() - start


def time_torchmetrics(scores: np.ndarray, positives: list[list[int]]) -> float:
    import torch
    from torchmetrics.functional.retrieval import (
        retrieval_average_precision,
        retrieval_hit_rate,
        retrieval_reciprocal_rank,
    )

    start = time.perf_counter()
    preds = torch.from_numpy(scores)
    for q, pos in enumerate(positives):
        target = torch.zeros(scores.shape[1], dtype=torch.bool)
        target[pos] = True
        for k in KS:
            retrieval_hit_rate(preds[q], target, top_k=k)
        retrieval_average_precision(preds[q], target)
        retrieval_average_precision(preds[q], target, top_k=10)
        retrieval_reciprocal_rank(preds[q], target)
    return time.perf_counter() - start


def reference_times(dump: EmbeddingDump, limit: int | None, skip: set[str]) -> dict[str, tuple[float, bool]]:
    """Seconds per tool over both directions, and whether they were extrapolated."""
    totals: dict[str, float] = {}
    extrapolated = False
    warm = np.random.default_rng(0).random((3, 20)).astype(np.float32)
    for name, fn in (("ranx", time_ranx), ("torchmetrics", time_torchmetrics)):
        if name not in skip:
            fn(warm, [[0], [1, 2], [3]])  # JIT/cache loading outside the timed runs
    for direction in ("t2a", "a2t"):
        n_all = dump.n_captions if direction == "t2a" else dump.n_clips
        scores, positives = queries(dump, direction, limit)
        scale = n_all / scores.shape[0]
        extrapolated |= scale > 1
        for name, fn in (("ranx", time_ranx), ("torchmetrics", time_torchmetrics)):
            if name not in skip:
                totals[name] = totals.get(name, 0.0) + fn(scores, positives) * scale
        del scores
        gc.collect()
    return {name: (secs, extrapolated) for name, secs in totals.items()}


def bench_size(n_clips: int, n_captions: int, args: argparse.Namespace) -> None:
    dump = make_dump(n_clips, n_captions, args.dim, args.seed)
    print(f"\n== {n_clips} clips x {n_captions} captions, D={args.dim} ==")
    block = args.max_block_mb * 2**20
    tracemalloc.start()
    start = time.perf_counter()
    evaluate_dump(dump, max_block_bytes=block)
    t_dump = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    print(f"clapcap dump (chunked, incl. similarity): {t_dump:8.2f} s   peak traced memory {peak:,.0f} MiB")
    t_matrix = None
    if n_clips * n_captions <= args.max_matrix:
        sim = (unit(dump.text_embeds) @ unit(dump.audio_embeds).T).astype(np.float32)
        start = time.perf_counter()
        retrieval_metrics(sim, dump.caption_clip_index, max_block_bytes=block)
        t_matrix = time.perf_counter() - start
        del sim
        print(f"clapcap matrix (given similarity):        {t_matrix:8.2f} s")
    limit = None if n_clips * n_captions <= args.max_matrix else args.ref_queries
    ours = t_matrix if t_matrix is not None else t_dump
    label = "matrix" if t_matrix is not None else "dump"
    for name, (secs, extrap) in reference_times(dump, limit, set(args.skip)).items():
        note = f" (extrapolated from {args.ref_queries} queries per direction)" if extrap else ""
        print(f"{name:13s}                             {secs:8.2f} s   ratio {name}/clapcap-{label} "
              f"= {secs / ours:,.1f}x{note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000x5000,10000x50000",
                        help="comma-separated CLIPSxCAPTIONS (default 1000x5000,10000x50000)")
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-block-mb", type=int, default=256)
    parser.add_argument("--max-matrix", type=int, default=20_000_000,
                        help="largest clips*captions for which full matrices are built")
    parser.add_argument("--ref-queries", type=int, default=200,
                        help="queries per direction timed for ranx/torchmetrics at larger sizes")
    parser.add_argument("--skip", nargs="*", default=[], choices=["ranx", "torchmetrics"])
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    for size in args.sizes.split(","):
        clips, captions = (int(x) for x in size.lower().split("x"))
        bench_size(clips, captions, args)


if __name__ == "__main__":
    main()
