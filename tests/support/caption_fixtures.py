"""Helpers for the captioning tests: informative random dumps and a fake scorer.

Lives in ``tests/support``, which pytest puts on ``sys.path`` (``pythonpath`` in pyproject.toml).
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np

from clapcap.captioning.config import CaptionerConfig, StageConfig, TrainConfig
from clapcap.data.dump import EmbeddingDump, save_dump
from clapcap.data.prepare import load_dataset

TINY_MODEL = {"hidden": 32, "layers": 1, "heads": 2, "prefix_length": 4, "vocab_size": 200,
              "max_caption_tokens": 24, "n_positions": 64}


# A subset study's training section (stage 1 only runs): one epoch each, small batches.
SUBSET_TRAIN = {"batch_size": 32, "lm_pretrain_epochs": 1, "stage1": {"epochs": 1, "lr_projection": 3e-3},
                "stage2": {"epochs": 1, "lr_projection": 1e-3, "lr_lm": 1e-3}}


def corpus_with_dumps(tmp: Path, *, n_clips: int, music_fraction: float, encoders: list[str]) -> tuple[Path, dict]:
    """A synthetic corpus in ``tmp/corpus`` (1-2 s clips) and a random dump per name of
    ``encoders``: the start of the subset-encoder studies' fixtures (music, specialists)."""
    from clapcap.data.config import DataParams
    from clapcap.data.prepare import prepare_data
    from clapcap.data.synth import SynthConfig

    corpus = tmp / "corpus"
    prepare_data(DataParams(out_dir=str(corpus), synthetic=SynthConfig(n_clips=n_clips, seed=2, min_duration_s=1.0,
                                                                       max_duration_s=2.0,
                                                                       music_fraction=music_fraction)),
                 progress=False)
    return corpus, {name: str(make_dump(corpus, tmp / f"{name}.npz", seed=i)) for i, name in enumerate(encoders)}


def subset_study_section(corpus: Path, dump: str, out: Path, **sections) -> dict:
    """A captioning section for a subset-encoder study: one tiny GPT-2 at stage 1, no LR
    search, noise seeds 0 and 1, no tracking; ``sections`` adds the study's own part."""
    return {"dataset_dir": str(corpus), "dump": dump, "out_dir": str(out), "lms": ["gpt2"],
            "models": {"gpt2": {"decoder": "gpt2", **TINY_MODEL}}, "train": {"gpt2": SUBSET_TRAIN},
            "use_lr_search": False, "noise_seeds": [0, 1], "track": False, "progress": False, **sections}


def _word_vector(word: str, dim: int) -> np.ndarray:
    return np.random.default_rng(zlib.crc32(word.encode())).standard_normal(dim)


def make_dump(corpus: Path, path: Path, *, dim: int = 16, seed: int = 0, frames: int = 0) -> Path:
    """A dump whose clip embedding is a bag of its first caption's words plus noise.

    ``frames`` > 0 also stores an ``audio_frames`` (N, frames, dim) extra.
    """
    manifest = load_dataset(corpus).manifest
    rng = np.random.default_rng(seed)
    audio = np.stack([sum(_word_vector(w, dim) for w in caps[0].lower().split())
                      for caps in manifest["captions"]]).astype(np.float32)
    audio += 0.1 * rng.standard_normal(audio.shape).astype(np.float32)
    caps = [c for cs in manifest["captions"] for c in cs]
    index = np.asarray([i for i, cs in enumerate(manifest["captions"]) for _ in cs])
    extras = {}
    if frames:
        extras["audio_frames"] = (audio[:, None, :] + rng.standard_normal((len(audio), frames, dim))
                                  ).astype(np.float32)
    dump = EmbeddingDump(audio, rng.standard_normal((len(caps), dim)).astype(np.float32), index,
                         list(manifest["clip_id"]), caps, {"encoder": "fake"}, extras)
    return save_dump(dump, path)


def tiny_model(decoder: str = "gpt2", **kw) -> CaptionerConfig:
    return CaptionerConfig(decoder=decoder, **{**TINY_MODEL, **kw})


def tiny_train(**kw) -> TrainConfig:
    base = dict(seed=0, batch_size=32, lm_pretrain_epochs=1,
                stage1=StageConfig(epochs=2, lr_projection=3e-3),
                stage2=StageConfig(epochs=1, lr_projection=1e-3, lr_lm=1e-3))
    return TrainConfig(**{**base, **kw})


def fake_score_captions(predictions, references, *, metrics=None, trim_sentences=False, trim_words=None, **_):
    """Stand-in for aac-metrics scoring: word-overlap F1 named as two metrics."""
    from clapcap.evaluation.text import postprocess

    missing = sorted(set(references) - set(predictions))
    if missing:
        raise ValueError(f"missing ids {missing}")
    per_clip = {}
    for cid, refs in references.items():
        pred = set(postprocess(predictions[cid], trim_sentences=trim_sentences, trim_words=trim_words).lower().split())
        best = max(len(pred & set(r.lower().split())) / max(1, len(pred | set(r.lower().split()))) for r in refs)
        per_clip[cid] = {"cider_d": best * 2, "meteor": best}
    corpus = {m: float(np.mean([v[m] for v in per_clip.values()])) for m in ("cider_d", "meteor")}
    return {"corpus": corpus, "per_clip": per_clip, "unavailable": {"fense": "fake"}, "primary": "cider_d"}
