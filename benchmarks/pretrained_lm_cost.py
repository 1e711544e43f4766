"""Gemma 3 270M against SmolLM2-135M (the named peer) as a frozen ClipCap decoder: seconds per
stage-1 training step and per greedily decoded caption, as ratios from one run; and whether
the prefix loss on Gemma drops over a few stage-1 steps.

Both LMs go through clapcap's own code: :func:`create_captioner` (``decoder: causal``,
``tokenizer: pretrained``, float32, prefix_length 8, as the study's rows) on the converted
folders; a step is ``loss_on_captions`` then AdamW on the projection with the LM frozen (the LM
runs forward and backward, its weights get no gradient); decoding is ``generate_captions``
(greedy, batch 8, forced to exactly ``--tokens`` new tokens with ``min_new_tokens`` and no
line-end stop, so both LMs do the same work). Inputs are random 256-d embeddings and real short
captions. The loss run fits 8 captions to 8 fixed embeddings for ``--loss-steps`` steps at the
study's stage-1 rate (0.01), once with the prefix first and once with Gemma's ``<bos>``
embedding before it (``CaptionerConfig.prefix_bos``: what Gemma saw first in pretraining).

Usage: ``python benchmarks/pretrained_lm_cost.py [--gemma models/pretrained/gemma3_270m]
[--smollm2 models/pretrained/smollm2_135m] [--steps 3] [--loss-steps 20] [--threads 1]``
(``pipelines/pretrained_lm.py --lm gemma3`` and ``pipelines/pretrained_smollm2.py`` write the folders).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from clapcap.captioning.config import CaptionerConfig, DecodingConfig
from clapcap.captioning.generation import generate_captions
from clapcap.captioning.model import ClipCapCaptioner, create_captioner
from clapcap.captioning.tokenizer import load_pretrained_tokenizer

CAPTIONS = ["a dog barks twice", "rain falls on a tin roof", "a car engine starts and idles",
            "birds chirp in the morning", "a man speaks while a crowd claps", "thunder rumbles in the distance",
            "water runs from a tap into a sink", "a bell rings three times"]
IN_DIM, BATCH = 256, 8


def captioner(folder: str, *, prefix_bos: bool = False) -> ClipCapCaptioner:
    torch.manual_seed(0)
    cfg = CaptionerConfig(decoder="causal", pretrained_dir=folder, tokenizer="pretrained", in_dim=IN_DIM,
                          prefix_length=8, projection_depth=2, dropout=0.1, max_caption_tokens=40,
                          prefix_bos=prefix_bos)
    model = create_captioner(cfg, load_pretrained_tokenizer(folder))
    model.set_lm_trainable(False)
    return model


def train_steps(model: ClipCapCaptioner, x: torch.Tensor, steps: int) -> list[float]:
    """``steps`` stage-1 steps on ``CAPTIONS``; returns each step's seconds and loss, interleaved."""
    model.train()
    model.lm.eval()  # frozen: no dropout inside the LM
    opt = torch.optim.AdamW(model.projection.parameters(), lr=1e-2)
    out = []
    for _ in range(steps):
        start = time.perf_counter()
        loss = model.loss_on_captions(x, CAPTIONS)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        out += [time.perf_counter() - start, loss.item()]
    return out


def step_seconds(model: ClipCapCaptioner, steps: int) -> float:
    x = torch.from_numpy(np.random.default_rng(1).standard_normal((BATCH, IN_DIM)).astype(np.float32))
    return float(np.median(train_steps(model, x, steps + 1)[2::2]))  # the first step warms up


def decode_seconds(model: ClipCapCaptioner, tokens: int, repeats: int) -> float:
    model.lm.generation_config.min_new_tokens = tokens  # equal work: no LM stops early
    x = np.random.default_rng(2).standard_normal((BATCH, IN_DIM)).astype(np.float32)
    cfg = DecodingConfig(max_new_tokens=tokens)
    times = []
    for _ in range(repeats + 1):  # the first pass warms up
        start = time.perf_counter()
        generate_captions(model, x, cfg, batch_size=BATCH, stop_at_line_end=False)
        times.append(time.perf_counter() - start)
    model.lm.generation_config.min_new_tokens = None
    return min(times[1:]) / BATCH


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gemma", default="models/pretrained/gemma3_270m")
    parser.add_argument("--smollm2", default="models/pretrained/smollm2_135m")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--loss-steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"stage-1 step: batch {BATCH}, median of {args.steps}; decoding: batch {BATCH}, {args.tokens} new "
          f"tokens, best of {args.repeats}; {args.threads} thread(s)")
    cost = {}
    for name, folder in (("smollm2", args.smollm2), ("gemma3", args.gemma)):
        model = captioner(folder)
        lengths = [len(ids) for ids in model.tokenizer(CAPTIONS, add_special_tokens=False)["input_ids"]]
        cost[name] = (step_seconds(model, args.steps), decode_seconds(model, args.tokens, args.repeats))
        params = sum(p.numel() for p in model.lm.parameters()) / 1e6
        print(f"{name:>8}: {params:.0f} M parameters, {np.mean(lengths):.2f} tokens per caption | "
              f"{cost[name][0]:.3f} s per step | {cost[name][1]:.3f} s per caption")
    (step_g, dec_g), (step_s, dec_s) = cost["gemma3"], cost["smollm2"]
    print(f"gemma3 / smollm2: step x{step_g / step_s:.2f}, decoding x{dec_g / dec_s:.2f}")
    x = torch.from_numpy(np.random.default_rng(3).standard_normal((BATCH, IN_DIM)).astype(np.float32))
    for name, folder, with_bos in (("gemma3", args.gemma, False), ("gemma3 + <bos>", args.gemma, True),
                                   ("smollm2", args.smollm2, False)):
        losses = train_steps(captioner(folder, prefix_bos=with_bos), x, args.loss_steps)[1::2]
        shown = " ".join(f"{v:.2f}" for v in losses[::5] + [losses[-1]])
        print(f"prefix loss, {name:>14}, steps 1,6,11,16,{args.loss_steps}: {shown}")


if __name__ == "__main__":
    main()
