"""GPU check (``make gpu-check``): real-size CLAP on CUDA, printed figure by figure.

1. An HF ``ClapModel`` at ``laion/clap-htsat-unfused``'s size (HTSAT-tiny audio tower, RoBERTa-base
   text tower, 512-d projection; config built locally, random weights, no hub access): one
   training step (forward + backward + AdamW) at batch 32, fp32 and bf16 autocast
   (:meth:`clapcap.compute.Compute.autocast`, the project's own bf16 path).
2. Embedding throughput of the project's encoder (:class:`clapcap.encoders.hf_clap.HFClapEncoder`:
   deterministic crop, features, forward, copy back) against a raw loop of the same work done
   the plain transformers way (``ClapFeatureExtractor`` + ``get_audio_features``). Goal: >= 70 %.
   Then the same encoder with the model in bf16 against the plain fp32 loop (throughput ratio,
   and the smallest cosine of a clip's bf16 embedding to its fp32 one).
3. :func:`retrieval_on_gpu`: the retrieval metrics on the GPU against the CPU path (hook; see there).

Exits 2 with one line when CUDA is not available. ``--tiny`` runs every piece with a tiny config
on whatever device ``compute`` resolves to (the CPU here), for tests.

Usage: ``python benchmarks/gpu_check.py [--tiny] [--steps 5] [--clips 128]``
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from retrieval_scale import (
    make_dump,  # benchmarks/retrieval_scale.py (this script's folder is on sys.path)
)

from clapcap.clap.preprocessing import ClapPreprocessing
from clapcap.compute import Compute, ComputeParams, resolve
from clapcap.encoders.hf_clap import HFClapEncoder
from clapcap.retrieval.metrics import per_query_dump

SAMPLE_RATE = 48000
CLIP_S = 10.0
TEXT_LEN = 77  # laion_clap pads captions to 77 tokens


def htsat_unfused_config(tiny: bool = False) -> Any:
    """``ClapConfig`` with ``laion/clap-htsat-unfused``'s sizes (or a tiny one for CPU tests)."""
    from transformers import ClapAudioConfig, ClapConfig, ClapTextConfig

    if tiny:
        # The tiny synthetic CLAP's audio tower (docs: hidden = 16 * 2**3; last grid 128/4/8 >= window 4).
        audio = ClapAudioConfig(spec_size=128, num_mel_bins=64, patch_size=4, patch_stride=[4, 4], window_size=4,
                                depths=[1, 1, 1, 1], num_attention_heads=[1, 2, 4, 4], patch_embeds_hidden_size=16,
                                hidden_size=128, projection_dim=16, enable_fusion=False)
        text = ClapTextConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                              intermediate_size=64, max_position_embeddings=100, projection_dim=16)
        return ClapConfig(text_config=text.to_dict(), audio_config=audio.to_dict(), projection_dim=16)
    audio = ClapAudioConfig(spec_size=256, num_mel_bins=64, patch_size=4, patch_stride=[4, 4], window_size=8,
                            depths=[2, 2, 6, 2], num_attention_heads=[4, 8, 16, 32], patch_embeds_hidden_size=96,
                            hidden_size=768, projection_dim=512, enable_fusion=False, mlp_ratio=4.0)
    text = ClapTextConfig(vocab_size=50265, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                          intermediate_size=3072, max_position_embeddings=514, type_vocab_size=1,
                          layer_norm_eps=1e-5, projection_dim=512, pad_token_id=1)
    return ClapConfig(text_config=text.to_dict(), audio_config=audio.to_dict(), projection_dim=512)


def feature_extractor(tiny: bool = False) -> Any:
    """The unfused CLAP feature extractor (48 kHz, 64 mel bins, 10 s window, 50-14000 Hz)."""
    from transformers import ClapFeatureExtractor

    return ClapFeatureExtractor(feature_size=64, sampling_rate=SAMPLE_RATE, max_length_s=1 if tiny else 10,
                                frequency_min=50, frequency_max=14000, truncation="rand_trunc",
                                padding="repeatpad")


def _sync(compute: Compute) -> None:
    if compute.is_cuda:
        torch.cuda.synchronize()


def _timed(fn: Callable[[], Any], compute: Compute, repeats: int) -> float:
    """Median seconds of ``repeats`` calls of ``fn`` after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        _sync(compute)
        t0 = time.perf_counter()
        fn()
        _sync(compute)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def train_step_seconds(model: Any, batch: dict[str, Any], compute: Compute, steps: int) -> float:
    """Median seconds of one forward + backward + AdamW step (loss: the model's CLIP loss in fp32)."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    model.train()

    def step() -> None:
        with compute.autocast():
            loss = model(**batch, return_loss=True).loss
        opt.zero_grad(set_to_none=True)
        loss.float().backward()
        opt.step()

    return _timed(step, compute, steps)


def random_batch(config: Any, batch_size: int, fe: Any, compute: Compute, seed: int = 0) -> dict[str, Any]:
    """A training batch on ``compute.device``: mel features of random clips and random token ids."""
    g = torch.Generator().manual_seed(seed)
    n_frames = int(fe.nb_max_samples // fe.hop_length) + 1
    text_len = min(TEXT_LEN, config.text_config.max_position_embeddings - 2)
    batch = {"input_features": torch.randn(batch_size, 1, n_frames, fe.feature_size, generator=g),
             "is_longer": torch.zeros(batch_size, 1, dtype=torch.bool),
             "input_ids": torch.randint(3, config.text_config.vocab_size, (batch_size, text_len), generator=g),
             "attention_mask": torch.ones(batch_size, text_len, dtype=torch.long)}
    return {k: v.to(compute.device) for k, v in batch.items()}


def clips(n: int, seconds: float, seed: int = 0) -> list[np.ndarray]:
    """``n`` random float32 clips of ``seconds`` at 48 kHz."""
    rng = np.random.default_rng(seed)
    return [(0.1 * rng.standard_normal(int(seconds * SAMPLE_RATE))).astype(np.float32) for _ in range(n)]


def raw_embed(model: Any, fe: Any, waves: list[np.ndarray], batch_size: int, compute: Compute) -> np.ndarray:
    """The plain transformers loop: feature extractor, ``get_audio_features``, copy back."""
    out = []
    with torch.inference_mode():
        for i in range(0, len(waves), batch_size):
            feats = fe(waves[i:i + batch_size], sampling_rate=SAMPLE_RATE, return_tensors="pt")
            emb = model.get_audio_features(input_features=feats["input_features"].to(compute.device),
                                           is_longer=feats["is_longer"].to(compute.device))
            out.append(emb.float().cpu().numpy())
    return np.concatenate(out)


def embedding_throughput(model: Any, fe: Any, waves: list[np.ndarray], batch_size: int,
                         compute: Compute) -> tuple[float, float, float]:
    """Clips per second through the project's encoder and through the raw loop, and the
    largest absolute difference of their embeddings."""
    encoder = HFClapEncoder(model, None, fe, ClapPreprocessing(fusion=False, crop="head"),
                            checkpoint="random-htsat", batch_size=batch_size, device=compute.device)
    ours = _timed(lambda: encoder.embed_audio(waves), compute, 2)
    raw = _timed(lambda: raw_embed(model, fe, waves, batch_size, compute), compute, 2)
    diff = float(np.abs(encoder.embed_audio(waves) - raw_embed(model, fe, waves, batch_size, compute)).max())
    return len(waves) / ours, len(waves) / raw, diff


def bf16_embedding(model: Any, fe: Any, waves: list[np.ndarray], batch_size: int,
                   compute: Compute) -> dict[str, float]:
    """The project's encoder with the model cast to bf16, against the plain fp32 forward loop:
    clips per second of each, and the smallest cosine between a clip's bf16 and fp32 embeddings.
    The model is cast back to fp32 afterwards."""
    raw_s = _timed(lambda: raw_embed(model, fe, waves, batch_size, compute), compute, 2)
    ref = raw_embed(model, fe, waves, batch_size, compute)
    model.to(torch.bfloat16)
    try:
        encoder = HFClapEncoder(model, None, fe, ClapPreprocessing(fusion=False, crop="head"),
                                checkpoint="random-htsat-bf16", batch_size=batch_size, device=compute.device)
        ours_s = _timed(lambda: encoder.embed_audio(waves), compute, 2)
        got = encoder.embed_audio(waves)
    finally:
        model.to(torch.float32)
    cos = (got * ref).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(ref, axis=1))
    return {"ours": len(waves) / ours_s, "raw_fp32": len(waves) / raw_s, "min_cosine": float(cos.min())}


def retrieval_on_gpu(device: str = "cuda", *, n_clips: int = 10_000, n_captions: int = 50_000,
                     dim: int = 512) -> dict[str, Any]:
    """The retrieval metrics through torch on ``device`` against the CPU path, on a random dump of
    ``n_captions`` x ``n_clips`` x ``dim``: both timings and the largest per-query difference
    (the parity gate's tolerance is 1e-9). Prints one line and returns the figures."""
    dump = make_dump(n_clips, n_captions, dim, noise=2.0, seed=0)
    start = time.perf_counter()
    cpu = per_query_dump(dump)
    cpu_s = time.perf_counter() - start
    start = time.perf_counter()
    gpu = per_query_dump(dump, device=device)
    gpu_s = time.perf_counter() - start
    diff = max(float(np.max(np.abs(np.asarray(cpu[d][k], dtype=np.float64) - np.asarray(gpu[d][k], dtype=np.float64))))
               for d in cpu for k in cpu[d])
    print(f"retrieval metrics {n_captions}x{n_clips}x{dim}: cpu {cpu_s:.2f} s, {device} (torch) {gpu_s:.2f} s, "
          f"max |torch - cpu| per query {diff:.2e} ({'ok' if diff <= 1e-9 else 'PARITY FAILED'})")
    return {"cpu_seconds": cpu_s, "cuda_seconds": gpu_s, "max_abs_diff": diff}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="tiny config on the resolved device (CPU tests)")
    parser.add_argument("--steps", type=int, default=5, help="timed training steps per precision")
    parser.add_argument("--clips", type=int, default=128, help="clips for the embedding throughput")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args(argv)
    if not args.tiny and not torch.cuda.is_available():
        print("gpu_check: CUDA is not available on this machine (torch.cuda.is_available() is False); "
              "nothing was measured. Run it on a GPU machine, or pass --tiny for a CPU smoke run.",
              file=sys.stderr)
        return 2
    compute = resolve(ComputeParams(device="auto" if args.tiny else "cuda"))
    torch.manual_seed(0)
    from transformers import ClapModel

    config, fe = htsat_unfused_config(args.tiny), feature_extractor(args.tiny)
    model = ClapModel(config).to(compute.device)
    name = torch.cuda.get_device_name(compute.device) if compute.is_cuda else "cpu"
    print(f"device: {compute.device} ({name}); model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f} M "
          f"parameters ({'tiny' if args.tiny else 'laion/clap-htsat-unfused size'})", flush=True)
    batch = random_batch(config, args.batch_size, fe, compute)
    for precision in ("fp32", "bf16") if compute.is_cuda else ("fp32",):
        sec = train_step_seconds(model, batch, Compute(compute.device, precision), args.steps)  # type: ignore[arg-type]
        print(f"train step, batch {args.batch_size}, {precision}: {sec * 1000:.1f} ms "
              f"({args.batch_size / sec:.1f} clips/s)", flush=True)
    model.eval()
    ours, raw, diff = embedding_throughput(model, fe, clips(args.clips, 1.0 if args.tiny else CLIP_S),
                                           args.batch_size, compute)
    print(f"embedding: project encoder {ours:.1f} clips/s, raw loop {raw:.1f} clips/s, "
          f"ratio {ours / raw:.0%} (goal >= 70%); max |diff| {diff:.2e}", flush=True)
    bf16 = bf16_embedding(model, fe, clips(args.clips, 1.0 if args.tiny else CLIP_S), args.batch_size, compute)
    print(f"embedding bf16: project encoder {bf16['ours']:.1f} clips/s, raw fp32 loop {bf16['raw_fp32']:.1f} "
          f"clips/s, ratio {bf16['ours'] / bf16['raw_fp32']:.2f}x; min cosine to fp32 {bf16['min_cosine']:.5f}",
          flush=True)
    sizes = {"n_clips": 50, "n_captions": 250, "dim": 16} if args.tiny else {}
    retrieval = retrieval_on_gpu(compute.device, **sizes)
    return 0 if retrieval["max_abs_diff"] <= 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())
