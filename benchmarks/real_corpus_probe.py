"""Does a CLAP over real pretrained towers learn from the real corpus? A floor-relative probe.

Frozen towers, learned heads: YAMNet's 1024-d clip embedding (AudioSet-trained,
clapcap.pretrained.yamnet) and all-MiniLM-L6-v2's mean-pooled 384-d caption embedding, each
followed by a linear projection to 256-d trained with the symmetric InfoNCE loss on the train
split of a folder dataset (the real corpus written by ``clapcap data corpus``: ``metadata.csv``
with ``file_name``, ``caption_*``, ``split``). The epoch is chosen on val t2a R@10; test is read
once. Printed: test t2a and a2t R@1/R@10 with clapcap's own metrics, as ratios to chance
(k / n_clips), next to the same heads untrained (random projections: the floor of the towers
alone without alignment).

    .venv/bin/python benchmarks/real_corpus_probe.py DATASET_DIR [--max-clips N] [--epochs E]

A benchmark script, not a test: it prints what it measures, whatever the numbers are.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np
import soundfile as sf
import torch
import torch.nn.functional as F
from tqdm import tqdm

from clapcap.pretrained.assets import minilm_dir
from clapcap.pretrained.yamnet import load_yamnet
from clapcap.retrieval.metrics import retrieval_metrics


def read_rows(root: Path, max_clips: int | None, seed: int) -> list[dict]:
    with open(root / "metadata.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        row["captions"] = [v for k, v in row.items() if k.startswith("caption") and v and v.strip()]
    if max_clips and len(rows) > max_clips:
        keep = np.random.default_rng(seed).choice(len(rows), max_clips, replace=False)
        rows = [rows[i] for i in sorted(keep)]
    return rows


def embed_audio(root: Path, rows: list[dict]) -> np.ndarray:
    import torchaudio.functional as AF

    net = load_yamnet().eval()
    out = []
    with torch.inference_mode():
        for row in tqdm(rows, desc="YAMNet", unit="clip"):
            wave, sr = sf.read(root / row["file_name"], dtype="float32", always_2d=True)
            w = torch.from_numpy(wave.mean(axis=1))
            if sr != 16000:
                w = AF.resample(w, sr, 16000)
            if w.numel() < 400:  # shorter than one STFT window: pad with silence
                w = F.pad(w, (0, 400 - w.numel()))
            out.append(net.embed(w).numpy())
    return np.stack(out)


def embed_text(texts: list[str]) -> np.ndarray:
    from transformers import AutoModel, AutoTokenizer

    folder = minilm_dir()
    tok, model = AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval()
    out = []
    with torch.inference_mode():
        for i in tqdm(range(0, len(texts), 128), desc="MiniLM", unit="batch"):
            enc = tok(texts[i:i + 128], padding=True, truncation=True, max_length=64, return_tensors="pt")
            hidden = model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).float()
            out.append(((hidden * mask).sum(1) / mask.sum(1)).numpy())
    return np.concatenate(out)


def split_arrays(rows, audio, text_of, split):
    idx = [i for i, r in enumerate(rows) if r["split"] == split]
    caps, owner = [], []
    for j, i in enumerate(idx):
        for c in rows[i]["captions"]:
            caps.append(text_of[c])
            owner.append(j)
    return audio[idx], np.stack(caps), np.asarray(owner)


def scores(heads, audio, text, owner):
    a_head, t_head = heads
    with torch.no_grad():
        a = F.normalize(a_head(torch.from_numpy(audio)), dim=-1)
        t = F.normalize(t_head(torch.from_numpy(text)), dim=-1)
    return retrieval_metrics((t @ a.T).numpy().astype(np.float64), owner, ks=(1, 10))


def train(train_set, val_set, *, epochs: int, seed: int, dim: int = 256):
    torch.manual_seed(seed)
    a_in, t_in = train_set[0].shape[1], train_set[1].shape[1]
    heads = (torch.nn.Linear(a_in, dim), torch.nn.Linear(t_in, dim))
    floor = tuple(torch.nn.Linear(h.in_features, dim) for h in heads)
    floor[0].load_state_dict(heads[0].state_dict())
    floor[1].load_state_dict(heads[1].state_dict())
    scale = torch.nn.Parameter(torch.tensor(np.log(1 / 0.07), dtype=torch.float32))
    opt = torch.optim.AdamW([*heads[0].parameters(), *heads[1].parameters(), scale], lr=1e-3, weight_decay=0.01)
    audio, text, owner = (torch.from_numpy(train_set[0]), torch.from_numpy(train_set[1]),
                          torch.from_numpy(train_set[2]))
    rng = np.random.default_rng(seed)
    best, best_state, history = -1.0, None, []
    for _epoch in range(epochs):
        order = rng.permutation(len(text))
        for i in range(0, len(order), 256):
            cap = torch.from_numpy(order[i:i + 256])
            clips = owner[cap]
            _, first = np.unique(clips.numpy(), return_index=True)  # one caption per clip per batch
            cap, clips = cap[first], clips[first]
            a = F.normalize(heads[0](audio[clips]), dim=-1)
            t = F.normalize(heads[1](text[cap]), dim=-1)
            logits = scale.exp().clamp(max=100) * t @ a.T
            target = torch.arange(len(cap))
            loss = (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2
            opt.zero_grad()
            loss.backward()
            opt.step()
        r10 = scores(heads, *val_set)["t2a"]["r@10"]
        history.append(round(r10, 4))
        if r10 > best:
            best = r10
            best_state = [{k: v.clone() for k, v in h.state_dict().items()} for h in heads]
    for h, s in zip(heads, best_state, strict=True):
        h.load_state_dict(s)
    return heads, floor, history


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset", type=Path, help="folder dataset (metadata.csv with file_name, caption_*, split)")
    ap.add_argument("--max-clips", type=int, default=None, help="a seeded sample of clips (default all)")
    ap.add_argument("--epochs", type=int, default=30, help="training epochs of the heads (default 30)")
    ap.add_argument("--seed", type=int, default=0, help="sampling and training seed (default 0)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    ap.add_argument("--out", type=Path, default=None, help="also write the numbers as JSON here")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rows = read_rows(args.dataset, args.max_clips, args.seed)
    t0 = time.perf_counter()
    audio = embed_audio(args.dataset, rows)
    texts = sorted({c for r in rows for c in r["captions"]})
    text_of = dict(zip(texts, embed_text(texts), strict=True))
    embed_s = time.perf_counter() - t0
    sets = {s: split_arrays(rows, audio, text_of, s) for s in ("train", "val", "test")}
    heads, floor, history = train(sets["train"], sets["val"], epochs=args.epochs, seed=args.seed)
    n_test = len(sets["test"][0])
    result = {"clips": {s: int(len(v[0])) for s, v in sets.items()}, "embed_seconds": round(embed_s, 1),
              "val_t2a_r10_by_epoch": history}
    print(f"clips train/val/test: {result['clips']}; embedding took {embed_s:.0f} s")
    for name, h in (("trained heads", heads), ("untrained heads (floor)", floor)):
        m = scores(h, *sets["test"])
        result[name] = m
        cells = []
        for d in ("t2a", "a2t"):
            for k in (1, 10):
                value, chance = m[d][f"r@{k}"], min(1.0, k / n_test)
                cells.append(f"{d} R@{k} {value:.3f} ({value / chance:.1f}x chance {chance:.3f})")
        print(f"{name:>24}: " + "; ".join(cells))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
