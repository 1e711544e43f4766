"""Benchmark (not a test): retrieval metrics at scale against a matrix-product floor.

Every figure is measured in this one run, on one random dump (the generator of
``bench_retrieval.py``: each caption is its clip's embedding plus Gaussian noise):

- **floor**: one float32 matrix product of the L2-normalised (n_captions, D) captions by the
  (D, n_clips) clips plus one comparison pass over the product (each caption's scores >= its
  positive's score, counted per row), block by block; normalisation is not timed;
- **cpu**: the work of :func:`clapcap.retrieval.metrics.evaluate_dump` (``per_query_dump``
  then ``aggregate``), the numpy path (screened), from the raw embeddings to the corpus
  metrics;
- **torch**: the same through torch on ``--device`` (default: CUDA when there is one, else
  torch on the CPU), with the largest absolute difference from the cpu path over every
  per-query value;
- **float64** (``--with-float64``): the unscreened numpy path (``screen=False``).

Each line gives wall seconds and process CPU seconds (all threads; steadier on a shared
machine), each with its ratio to the floor; ``maxrss`` is the process's peak resident
memory so far.

Usage::

    python benchmarks/retrieval_scale.py                        # 10k clips x 50k captions x 512
    python benchmarks/retrieval_scale.py --clips 200 --captions 1000 --dim 32
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from clapcap.data.dump import EmbeddingDump, normalize
from clapcap.retrieval.metrics import aggregate, evaluate_dump, per_query_dump


def make_dump(n_clips: int, n_captions: int, dim: int, noise: float, seed: int) -> EmbeddingDump:
    """Captions are their clip's embedding plus ``noise`` * N(0, 1) (bench_retrieval's dump)."""
    rng = np.random.default_rng(seed)
    audio = rng.normal(size=(n_clips, dim)).astype(np.float32)
    idx = np.sort(np.arange(n_captions) % n_clips)
    text = (audio[idx] + noise * rng.normal(size=(n_captions, dim))).astype(np.float32)
    return EmbeddingDump(audio, text, idx, [f"c{i}" for i in range(n_clips)],
                         [f"t{j}" for j in range(n_captions)])


def floor_seconds(dump: EmbeddingDump, block_bytes: int) -> float:
    """One float32 product and one comparison pass, in row blocks (inputs pre-normalised)."""
    text = normalize(dump.text_embeds).astype(np.float32)
    audio_t = np.ascontiguousarray(normalize(dump.audio_embeds).T, dtype=np.float32)
    idx = np.asarray(dump.caption_clip_index)
    step = max(1, block_bytes // (dump.n_clips * 5))  # float32 block + bool mask
    counts = np.empty(dump.n_captions, dtype=np.int64)

    def one_pass() -> None:
        for a in range(0, dump.n_captions, step):
            block = text[a:a + step] @ audio_t  # (R, n_clips)
            thr = block[np.arange(block.shape[0]), idx[a:a + step]]
            mask = block >= thr[:, None]
            counts[a:a + step] = np.add.reduce(mask.view(np.uint8), axis=1, dtype=np.int64)

    return _timed(one_pass)[0]


_CPU: dict[str, float] = {}  # process CPU seconds of the last timed call (all threads)


def _timed(fn) -> tuple[float, object]:
    start, cpu = time.perf_counter(), time.process_time()
    out = fn()
    _CPU["last"] = time.process_time() - cpu
    return time.perf_counter() - start, out


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _torch_device(requested: str | None) -> str:
    import torch

    if requested:
        return requested
    return "cuda" if torch.cuda.is_available() else "cpu"


def max_abs_difference(a: dict, b: dict) -> float:
    """Largest |a - b| over every per-query array of two ``per_query_dump`` results."""
    return max(float(np.max(np.abs(a[d][k] - b[d][k]))) for d in a for k in a[d])


def run(args: argparse.Namespace) -> dict[str, float]:
    """Run the benchmark; returns the seconds of each row (and ``torch_max_abs_diff``)."""
    dump = make_dump(args.clips, args.captions, args.dim, args.noise, args.seed)
    block = args.max_block_mb * 2**20
    print(f"== {args.clips} clips x {args.captions} captions, D={args.dim}, noise {args.noise} ==")
    out = {"floor": floor_seconds(dump, block)}
    floor_cpu = _CPU["last"]
    print(f"{'':43s} {'wall':>10s}  ratio  {'cpu-time':>10s}  ratio")
    print(f"{'floor (float32 product + 1 comparison pass)':43s} {out['floor']:8.2f} s  1.00x  "
          f"{floor_cpu:8.2f} s  1.00x  maxrss {_maxrss_mib():,.0f} MiB")

    def row(name: str, secs: float, note: str = "", cpu: float | None = None) -> None:
        out[name] = secs
        cpu = _CPU["last"] if cpu is None else cpu
        print(f"{name:43s} {secs:8.2f} s  {secs / out['floor']:.2f}x  {cpu:8.2f} s  "
              f"{cpu / floor_cpu:.2f}x  maxrss {_maxrss_mib():,.0f} MiB{note}")

    # evaluate_dump's work (per_query_dump + aggregate), keeping the per-query values
    secs, ref = _timed(lambda: per_query_dump(dump, max_block_bytes=block))
    cpu = _CPU["last"]
    secs_agg, metrics = _timed(lambda: aggregate(ref))
    row("cpu (evaluate_dump, numpy, screened)", secs + secs_agg, cpu=cpu + _CPU["last"])
    if not args.skip_torch:
        device = _torch_device(args.device)
        secs, pq = _timed(lambda: per_query_dump(dump, max_block_bytes=block, device=device))
        out["torch_max_abs_diff"] = max_abs_difference(pq, ref)
        row(f"torch ({device}, float64, per-query values)", secs,
            f"   max |torch - cpu| = {out['torch_max_abs_diff']:.3g}")
    if args.with_float64:
        secs, exact = _timed(lambda: evaluate_dump(dump, max_block_bytes=block, screen=False))
        row("cpu float64 path (screen=False)", secs, "   same metrics: "
            f"{all(exact[d] == metrics[d] for d in metrics)}")
    return out


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=10_000)
    parser.add_argument("--captions", type=int, default=50_000)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--noise", type=float, default=2.0,
                        help="caption noise (bench_retrieval's 2.0; 20 gives R@1 near 0.1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-block-mb", type=int, default=256)
    parser.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    parser.add_argument("--skip-torch", action="store_true")
    parser.add_argument("--with-float64", action="store_true", help="also time screen=False")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    main()
