"""Captioning benchmark: generation throughput and stage-1 step time, as ratios from one run.

1. Captions per second: batched generation with KV cache vs one clip at a time (batch 1,
   no cache), with the default (small) GPT-2 and T5 captioners; every caption is forced
   to ``--tokens`` new tokens so both paths do the same work.
2. Stage-1 training step time: from precomputed embeddings vs encoding audio on the fly
   through a tiny HF ``ClapModel`` audio tower (feature extraction + tower + step).

Usage: ``python benchmarks/bench_captioning.py [--clips 64] [--tokens 20] [--threads 1]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from clapcap.captioning.config import CaptionerConfig, DecodingConfig
from clapcap.captioning.generation import generate_captions
from clapcap.captioning.model import create_captioner
from clapcap.captioning.tokenizer import build_tokenizer

WORDS = "a loud soft high low beep hum siren bell drum melody plays sounds twice once repeatedly quiet".split()


def _captions(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=rng.integers(4, 10))).capitalize() + "." for _ in range(n)]


def _captioner(decoder: str, in_dim: int) -> object:
    tok = build_tokenizer("bpe", _captions(2000), vocab_size=512)  # the default for both decoders
    torch.manual_seed(0)
    return create_captioner(CaptionerConfig(decoder=decoder, in_dim=in_dim), tok).eval()


def _timed(fn, repeats: int = 2) -> float:
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def bench_generation(decoder: str, clips: int, tokens: int) -> dict[str, float]:
    model = _captioner(decoder, 64)
    model.lm.generation_config.min_new_tokens = tokens  # equal work on both paths
    x = np.random.default_rng(0).standard_normal((clips, 64)).astype(np.float32)
    cfg = DecodingConfig(max_new_tokens=tokens)
    batched = _timed(lambda: generate_captions(model, x, cfg, batch_size=clips, use_cache=True))
    single = _timed(lambda: generate_captions(model, x, cfg, batch_size=1, use_cache=False), repeats=1)
    single_cache = _timed(lambda: generate_captions(model, x, cfg, batch_size=1, use_cache=True), repeats=1)
    return {"batched_kv_cps": clips / batched, "one_at_a_time_cps": clips / single,
            "one_at_a_time_kv_cps": clips / single_cache, "ratio": single / batched}


def _audio_tower() -> tuple[object, object]:
    from transformers import ClapAudioConfig, ClapAudioModelWithProjection, ClapFeatureExtractor

    cfg = ClapAudioConfig(spec_size=128, num_mel_bins=64, patch_size=4, patch_stride=[4, 4], window_size=4,
                          depths=[1, 1, 1, 1], num_attention_heads=[1, 2, 4, 4], patch_embeds_hidden_size=16,
                          hidden_size=128, projection_dim=64, enable_fusion=False)
    fe = ClapFeatureExtractor(feature_size=64, sampling_rate=16000, hop_length=640, max_length_s=10,
                              fft_window_size=1024, frequency_min=50, frequency_max=8000,
                              truncation="rand_trunc", padding="repeatpad")
    return ClapAudioModelWithProjection(cfg).eval(), fe


def bench_stage1_step(batch: int, seconds: float) -> dict[str, float]:
    tower, fe = _audio_tower()
    model = _captioner("gpt2", 64)
    model.set_lm_trainable(False)
    opt = torch.optim.AdamW(model.projection.parameters(), lr=1e-3)
    captions = _captions(batch, seed=1)
    waves = [np.random.default_rng(i).standard_normal(int(16000 * seconds)).astype(np.float32) * 0.1
             for i in range(batch)]
    cached = torch.randn(batch, 64)

    def step(embeds: torch.Tensor) -> None:
        loss = model.loss_on_captions(embeds, captions)
        opt.zero_grad()
        loss.backward()
        opt.step()

    def on_the_fly() -> None:
        feats = fe(waves, sampling_rate=16000, return_tensors="pt")
        with torch.no_grad():
            embeds = tower(input_features=feats["input_features"]).audio_embeds  # (B, 64)
        step(embeds)

    pre = _timed(lambda: step(cached), repeats=3)
    fly = _timed(on_the_fly, repeats=2)
    return {"precomputed_s": pre, "on_the_fly_s": fly, "ratio": fly / pre}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=20)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"threads={args.threads} clips={args.clips} tokens/caption={args.tokens}")
    for decoder in ("gpt2", "t5"):
        g = bench_generation(decoder, args.clips, args.tokens)
        print(f"[generation {decoder}] batched+KV cache {g['batched_kv_cps']:.1f} captions/s | one at a time "
              f"(no cache) {g['one_at_a_time_cps']:.1f} captions/s | one at a time + cache "
              f"{g['one_at_a_time_kv_cps']:.1f} captions/s | speed-up x{g['ratio']:.1f}")
    s = bench_stage1_step(args.batch, args.seconds)
    print(f"[stage-1 step, batch {args.batch}, {args.seconds:g} s clips] precomputed {s['precomputed_s'] * 1e3:.1f} ms"
          f" | audio on the fly {s['on_the_fly_s'] * 1e3:.1f} ms | on-the-fly / precomputed x{s['ratio']:.1f}")


if __name__ == "__main__":
    main()
