"""The embedded synthetic corpus: deterministic clips, five captions each, two paraphrase views.

Clip ``i`` is drawn from ``numpy.random.default_rng([seed, i])``, so it does not depend on
how many clips are generated, and the same seed gives byte-identical WAV files.

A clip holds one to three events (:mod:`clapcap.data.synth_audio`) laid out either in
sequence or overlapping (the second event starts while the first plays). A fraction of
clips (``music_fraction``) are single melodies carrying MusicCaps-style captions, an
``aspect_list`` and an ``is_audioset_eval`` flag (source ``synthetic_music``); their
paraphrase views paraphrase the clip's event description.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from clapcap.data.synth_audio import KINDS, PITCHED, REPEATABLE, Event, mix
from clapcap.data.synth_text import LABELS, describe, music_captions
from clapcap.utils.io import atomic_path

logger = logging.getLogger(__name__)


@dataclass
class SynthConfig:
    """Parameters of the synthetic corpus generator."""

    n_clips: int = 1000
    seed: int = 0
    sample_rate: int = 16000
    min_duration_s: float = 2.0
    max_duration_s: float = 10.0
    max_events: int = 3
    overlap_prob: float = 0.3
    music_fraction: float = 0.1
    audioset_eval_fraction: float = 0.3
    n_captions: int = 5

    def __post_init__(self) -> None:
        if self.n_clips < 1:
            raise ValueError(f"n_clips must be >= 1, found {self.n_clips}")
        if not 0 < self.min_duration_s <= self.max_duration_s:
            raise ValueError("need 0 < min_duration_s <= max_duration_s")
        if not 1 <= self.max_events <= 3:
            raise ValueError(f"max_events must be 1..3, found {self.max_events}")


def _draw_event(kind: str, rng: np.random.Generator) -> Event:
    ev = Event(kind=kind, loudness=str(rng.choice(["quiet", "loud"])))
    if kind in PITCHED:
        ev.pitch = str(rng.choice(["low", "high"]))
    if kind in REPEATABLE and kind != "clicks":
        ev.repetition = str(rng.choice(["once", "twice", "repeatedly"]))
    if kind == "melody":
        ev.key = str(rng.choice(["major", "minor"]))
        ev.tempo = str(rng.choice(["slow", "fast"]))
        ev.timbre = str(rng.choice(["sine", "square", "pluck"]))
    return ev


def _layout(events: list[Event], duration: float, overlap: bool, rng: np.random.Generator) -> None:
    """Assign onsets and durations in place: back-to-back segments, or the second event
    starting inside the first when ``overlap``."""
    if overlap and len(events) == 2:
        events[0].onset_s, events[0].duration_s = 0.0, duration
        start = float(rng.uniform(0.15, 0.4)) * duration
        events[1].onset_s, events[1].duration_s = start, duration * float(rng.uniform(0.4, 0.55))
        return
    cuts = np.sort(rng.uniform(0.3, 0.7, size=len(events) - 1)) if len(events) > 1 else np.array([])
    bounds = np.concatenate([[0.0], cuts, [1.0]]) * duration
    for ev, (a, b) in zip(events, zip(bounds[:-1], bounds[1:], strict=True), strict=True):
        gap = 0.05 * (b - a)
        ev.onset_s, ev.duration_s = float(a + gap), float(b - a - 2 * gap)


def make_clip(cfg: SynthConfig, index: int) -> tuple[np.ndarray, dict]:
    """Generate clip ``index``: its waveform and its manifest row (without split/path)."""
    rng = np.random.default_rng([cfg.seed, index])
    duration = float(np.round(rng.uniform(cfg.min_duration_s, cfg.max_duration_s), 2))
    is_music = rng.random() < cfg.music_fraction
    if is_music:
        events = [_draw_event("melody", rng)]
    else:
        n = int(rng.integers(1, cfg.max_events + 1))
        kinds = rng.choice(KINDS, size=n, replace=False)
        events = [_draw_event(str(k), rng) for k in kinds]
    overlap = len(events) == 2 and rng.random() < cfg.overlap_prob
    _layout(events, duration, overlap, rng)
    wave = mix(events, duration, cfg.sample_rate, rng)
    layout = "overlap" if overlap else "sequence"
    captions, view1, view2 = describe(events, layout, rng, cfg.n_captions)
    meta = {"events": [{k: v for k, v in vars(e).items() if v is not None and k != "extra"} for e in events],
            "layout": layout}
    row = {"clip_id": f"syn{index:05d}", "duration_s": duration, "sample_rate": cfg.sample_rate,
           "source": "synthetic", "is_audioset_eval": None, "captions": captions,
           "paraphrases_v1": view1, "paraphrases_v2": view2,
           "labels": sorted({LABELS[e.kind] for e in events})}
    if is_music:
        row["captions"], meta["aspect_list"] = music_captions(events[0], rng, cfg.n_captions)
        row["source"] = "synthetic_music"
        row["is_audioset_eval"] = bool(rng.random() < cfg.audioset_eval_fraction)
    row["meta"] = meta
    return wave, row


def generate_corpus(cfg: SynthConfig, out_dir: str | Path, *, progress: bool = True) -> pd.DataFrame:
    """Write ``cfg.n_clips`` WAV files under ``out_dir/audio`` and return their rows.

    Existing files with the expected content size are kept (resumable); rows have
    ``audio_path`` relative to ``out_dir`` and no ``split`` yet.
    """
    import soundfile as sf
    from tqdm.auto import tqdm


    audio_dir = Path(out_dir) / "audio"
    audio_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for i in tqdm(range(cfg.n_clips), desc="synthesising clips", disable=not progress):
        wave, row = make_clip(cfg, i)
        rel = f"audio/{row['clip_id']}.wav"
        target = Path(out_dir) / rel
        if not (target.exists() and sf.info(str(target)).frames == wave.size):
            with atomic_path(target) as tmp:
                sf.write(str(tmp), wave, cfg.sample_rate, subtype="PCM_16", format="WAV")
        row["audio_path"] = rel
        rows.append(row)
    logger.info("synthetic corpus: %d clips in %s", len(rows), audio_dir)
    return pd.DataFrame(rows)
