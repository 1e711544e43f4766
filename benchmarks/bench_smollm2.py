"""SmolLM2-135M as a frozen ClipCap decoder: the cost of one stage-1 step per caption, in
bfloat16 against float32 weights (the named peer), measured in one run.

A stage-1 step runs the frozen LM forward and backward (the gradient flows to the prefix, not
to the LM's weights). The script builds the real captioner (``decoder: causal``) from the
converted folder, times ``--steps`` optimizer steps per (dtype, batch) on random embeddings
and real-length captions, and prints seconds per caption and the bf16/fp32 ratio. A CPU
without AVX-512 BF16 (or AMX) may show no gain: that is what the ratio is for.

Usage: ``python benchmarks/bench_smollm2.py [--folder models/pretrained/smollm2_135m]
[--batches 4 16] [--steps 3] [--threads 1]`` (``dvc repro pretrained_smollm2`` makes the folder).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from clapcap.captioning.config import CaptionerConfig
from clapcap.captioning.model import create_captioner
from clapcap.captioning.tokenizer import load_pretrained_tokenizer

WORDS = "a loud soft high-pitched low beep hum siren bell drum melody plays sounds twice once then quiet".split()


def _captions(n: int, rng: np.random.Generator) -> list[str]:
    return [" ".join(rng.choice(WORDS, size=rng.integers(6, 16))).capitalize() + "." for _ in range(n)]


def seconds_per_caption(folder: str, dtype: str, batch: int, steps: int) -> float:
    tok = load_pretrained_tokenizer(folder)
    model = create_captioner(CaptionerConfig(decoder="causal", pretrained_dir=folder, lm_dtype=dtype,
                                             tokenizer="pretrained", in_dim=512), tok)
    model.set_lm_trainable(False)
    model.train()
    model.lm.eval()
    opt = torch.optim.AdamW(model.projection.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    times = []
    for _ in range(steps + 1):  # the first step warms up allocations and is not counted
        x = torch.from_numpy(rng.standard_normal((batch, 512)).astype(np.float32))
        start = time.perf_counter()
        loss = model.loss_on_captions(x, _captions(batch, rng))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - start)
    return float(np.median(times[1:])) / batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", default="models/pretrained/smollm2_135m")
    parser.add_argument("--batches", type=int, nargs="+", default=[4, 16])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"SmolLM2-135M stage-1 step, {args.threads} thread(s), median of {args.steps} steps")
    print(f"{'batch':>5}  {'fp32 s/caption':>14}  {'bf16 s/caption':>14}  {'bf16/fp32':>9}")
    for batch in args.batches:
        fp32 = seconds_per_caption(args.folder, "float32", batch, args.steps)
        bf16 = seconds_per_caption(args.folder, "bfloat16", batch, args.steps)
        print(f"{batch:>5}  {fp32:>14.4f}  {bf16:>14.4f}  {bf16 / fp32:>9.2f}")


if __name__ == "__main__":
    main()
