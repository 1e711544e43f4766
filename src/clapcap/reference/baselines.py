"""Offline reference captioners for the embedded default (no external model needed).

- **Retrieval captioner** (:func:`nearest_caption_predictions`): for each test clip, the
  training caption whose text embedding is closest (cosine) to the clip's audio embedding.
  It only ever sees the train split, so it is a clean reference.
- **Planted leak** (:func:`planted_leak_predictions`): a deliberately leaky system for
  demonstrating the leakage check on the pipeline. On clips a model fine-tuned on the
  public split could have seen (``is_audioset_eval`` equal to ``seen_flag``) it returns a
  reference caption of that very clip, as a model trained on test data would; elsewhere
  it returns the clean system's caption. It is never a result, only a check that the
  pipeline catches leaks.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clapcap.data.dump import load_dump, normalize
from clapcap.evaluation.shared_split import read_split_json
from clapcap.utils.io import read_json, write_json

logger = logging.getLogger(__name__)


def nearest_captions(audio_embeds: np.ndarray, clip_ids: list[str], train_dump: str | Path, *,
                     origin: str = "audio") -> dict[str, str]:
    """``{clip_id: nearest train caption}`` of the clips' ``audio_embeds`` by audio-to-text cosine
    similarity against the captions of ``train_dump``.

    Raises:
        DumpError: when the dump is malformed; ValueError when the embedding dimensions differ.
    """
    train = load_dump(train_dump)
    if train.text_embeds.shape[1] != audio_embeds.shape[1]:
        raise ValueError(f"{train_dump} and {origin}: embedding dims differ "
                         f"({train.text_embeds.shape[1]} vs {audio_embeds.shape[1]})")
    sim = normalize(audio_embeds) @ normalize(train.text_embeds).T  # (N_clips, N_train_captions)
    best = np.argmax(sim, axis=1)
    return {cid: train.captions[int(j)] for cid, j in zip(clip_ids, best, strict=True)}


def nearest_caption_predictions(train_dump: str | Path, test_dump: str | Path) -> dict[str, str]:
    """``{test clip_id: nearest train caption}`` by audio-to-text cosine similarity.

    Raises:
        DumpError: when a dump is malformed or the embedding dimensions differ.
    """
    test = load_dump(test_dump)
    return nearest_captions(test.audio_embeds, test.clip_ids, train_dump, origin=str(test_dump))


def planted_leak_predictions(clean: dict[str, str], split_json: str | Path, *,
                             seen_flag: bool = False) -> dict[str, str]:
    """Copy the first reference caption on possibly-seen clips; ``clean`` elsewhere."""
    split = read_split_json(split_json)
    refs, flags = split.references, split.flags
    missing = sorted(set(refs) - set(clean))
    if missing:
        raise ValueError(f"clean predictions lack {len(missing)} split clip(s), e.g. {missing[:5]}")
    return {cid: (refs[cid][0] if flags.get(cid) is seen_flag else clean[cid]) for cid in refs}


def write_baselines(train_dump: str | Path, test_dump: str | Path, split_json: str | Path,
                    out_dir: str | Path) -> dict[str, Path]:
    """Write ``retrieval_captioner.json`` and ``planted_leak.json`` under ``out_dir``."""
    out_dir = Path(out_dir)
    clean = nearest_caption_predictions(train_dump, test_dump)
    split_ids = set(read_split_json(split_json).references)
    clean = {cid: cap for cid, cap in clean.items() if cid in split_ids}
    leak = planted_leak_predictions(clean, split_json)
    paths = {"retrieval_captioner": write_json(out_dir / "retrieval_captioner.json", clean),
             "planted_leak": write_json(out_dir / "planted_leak.json", leak)}
    logger.info("reference baselines for %d clips -> %s", len(clean), out_dir)
    return paths


def load_predictions(path: str | Path) -> dict[str, str]:
    """Read a ``{clip_id: caption}`` JSON."""
    return dict(read_json(path))


@dataclass
class BaselineParams:
    """``params.yaml`` section ``reference_baselines``."""

    train_dump: str = "data/embeddings/synth_clap/corpus/train.npz"
    test_dump: str = "data/embeddings/synth_clap/corpus/test.npz"
    split_json: str = "outputs/reference_split/split.json"
    out_dir: str = "outputs/reference_inputs"
