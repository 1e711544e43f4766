"""Text embedding with the MiniLM synthetic CLAP: the hf_clap backend (texts batched by length,
tower outputs memoised) against plain batches in input order, one run, 1 thread.

  python benchmarks/bench_text_batching.py [--model models/synth_clap/model] [--n 640]

Prints both times, their ratio, and the largest difference between the two embeddings.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="models/synth_clap/model")
    parser.add_argument("--dataset", default="data/corpus")
    parser.add_argument("--n", type=int, default=640)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from clapcap.clap.preprocessing import tokenize
    from clapcap.data.prepare import load_dataset
    from clapcap.encoders.base import EncoderConfig
    from clapcap.encoders.factory import create_encoder

    enc = create_encoder(EncoderConfig(checkpoint=args.model, batch_size=32))
    test = load_dataset(args.dataset).split("test")
    texts = [c for caps in test["captions"] for c in caps][: args.n]
    t0 = time.perf_counter()
    plain = []
    with torch.inference_mode():  # the peer: batches of 32 in input order, no memo
        for i in range(0, len(texts), 32):
            plain.append(enc.model.get_text_features(**tokenize(enc.tokenizer, texts[i:i + 32])).float().numpy())
    t_plain = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours = enc.embed_text(texts)
    t_ours = time.perf_counter() - t0
    diff = float(np.abs(ours - np.concatenate(plain)).max())
    print(f"{len(texts)} texts: plain batches {t_plain:.1f} s, hf_clap backend {t_ours:.1f} s, "
          f"ratio plain/backend {t_plain / t_ours:.2f}, max |difference| {diff:.1e}")


if __name__ == "__main__":
    main()
