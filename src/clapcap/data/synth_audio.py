"""Sound-event synthesis for the embedded corpus.

Every event is described by an :class:`Event` (kind plus attributes) and rendered
deterministically from a numpy ``Generator``. Kinds: ``beep`` (steady tone),
``chirp_up``/``chirp_down`` (log-frequency sweeps), ``noise`` (band-limited noise burst),
``clicks`` (impulse train), ``hum`` (low harmonic drone), ``siren`` (frequency-modulated
wail), ``bell`` (inharmonic decaying partials), ``drum`` (pitch-dropping thump) and
``melody`` (notes of a major or minor scale with a tempo and a timbre).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

KINDS = ("beep", "chirp_up", "chirp_down", "noise", "clicks", "hum", "siren", "bell", "drum", "melody")
REPEATABLE = ("beep", "noise", "bell", "drum", "clicks")
PITCHED = ("beep", "chirp_up", "chirp_down", "hum", "siren", "bell")
AMPLITUDE = {"quiet": 0.12, "loud": 0.5}
MAJOR = (0, 2, 4, 5, 7, 9, 11, 12)
MINOR = (0, 2, 3, 5, 7, 8, 10, 12)


@dataclass
class Event:
    """One sound event. Attributes not used by a kind stay ``None``."""

    kind: str
    loudness: str  # quiet | loud
    pitch: str | None = None  # low | high (pitched kinds)
    repetition: str | None = None  # once | twice | repeatedly (repeatable kinds)
    key: str | None = None  # major | minor (melody)
    tempo: str | None = None  # slow | fast (melody)
    timbre: str | None = None  # sine | square | pluck (melody)
    onset_s: float = 0.0
    duration_s: float = 1.0
    extra: dict = field(default_factory=dict)


def _env(n: int, sr: int, attack_s: float = 0.01, release_s: float = 0.03) -> np.ndarray:
    """Linear attack/release envelope that avoids clicks at event edges."""
    env = np.ones(n, dtype=np.float64)
    a, r = min(n // 2, int(attack_s * sr)), min(n // 2, int(release_s * sr))
    if a:
        env[:a] = np.linspace(0.0, 1.0, a)
    if r:
        env[-r:] = np.linspace(1.0, 0.0, r)
    return env


def _base_freq(pitch: str | None, rng: np.random.Generator, kind: str) -> float:
    if kind == "hum":
        return float(rng.uniform(55, 90) if pitch == "low" else rng.uniform(180, 260))
    return float(rng.uniform(180, 380) if pitch == "low" else rng.uniform(1200, 2600))


def _unit(kind: str, ev: Event, n: int, sr: int, rng: np.random.Generator) -> np.ndarray:
    """One occurrence of a (non-melody) event, n samples long, peak about 1."""
    t = np.arange(n) / sr
    if kind == "beep":
        return np.sin(2 * np.pi * _base_freq(ev.pitch, rng, kind) * t) * _env(n, sr)
    if kind in ("chirp_up", "chirp_down"):
        f0 = _base_freq(ev.pitch, rng, kind)
        f1 = f0 * (3.0 if kind == "chirp_up" else 1 / 3.0)
        k = np.log(f1 / f0) / max(t[-1], 1e-6)
        phase = 2 * np.pi * f0 * (np.exp(k * t) - 1) / k
        return np.sin(phase) * _env(n, sr)
    if kind == "noise":
        from scipy.signal import butter, sosfilt

        lo, hi = (200, 1500) if rng.random() < 0.5 else (1500, 6000)
        sos = butter(4, [lo, min(hi, sr / 2 - 100)], btype="band", fs=sr, output="sos")
        x = sosfilt(sos, rng.standard_normal(n))
        return x / (np.abs(x).max() + 1e-9) * _env(n, sr, 0.005, 0.05)
    if kind == "clicks":
        x = np.zeros(n)
        period = int(sr * rng.uniform(0.08, 0.16))
        click = np.exp(-np.arange(int(0.004 * sr)) / (0.0008 * sr)) * rng.choice([-1, 1])
        for start in range(0, max(n - click.size, 1), period):
            x[start:start + click.size] += click[: n - start]
        return x
    if kind == "hum":
        f = _base_freq(ev.pitch, rng, kind)
        x = sum(np.sin(2 * np.pi * f * h * t) / h for h in (1, 2, 3, 4))
        return x / 2.1 * _env(n, sr, 0.1, 0.1)
    if kind == "siren":
        f = _base_freq(ev.pitch, rng, kind)
        rate = rng.uniform(0.5, 1.5)
        inst = f * (1 + 0.3 * np.sin(2 * np.pi * rate * t))
        return np.sin(2 * np.pi * np.cumsum(inst) / sr) * _env(n, sr, 0.05, 0.05)
    if kind == "bell":
        f = _base_freq(ev.pitch, rng, kind)
        partials = ((1.0, 1.0), (2.76, 0.5), (5.4, 0.25), (8.93, 0.12))
        x = sum(a * np.sin(2 * np.pi * f * r * t) for r, a in partials)
        return x * np.exp(-t / 0.35) * _env(n, sr, 0.002, 0.02)
    if kind == "drum":
        f = np.linspace(rng.uniform(110, 160), 45, n)
        x = np.sin(2 * np.pi * np.cumsum(f) / sr) * np.exp(-t / 0.09)
        return x + 0.2 * rng.standard_normal(n) * np.exp(-t / 0.01)
    raise ValueError(f"unknown event kind {kind!r}")


def _note(timbre: str, freq: float, n: int, sr: int) -> np.ndarray:
    t = np.arange(n) / sr
    if timbre == "sine":
        x = np.sin(2 * np.pi * freq * t + 0.02 * np.sin(2 * np.pi * 5 * t))
        return x * _env(n, sr, 0.03, 0.05)
    if timbre == "square":
        x = sum(np.sin(2 * np.pi * freq * h * t) / h for h in (1, 3, 5, 7, 9))
        return 0.8 * x * _env(n, sr, 0.01, 0.03)
    if timbre == "pluck":
        x = sum(np.sin(2 * np.pi * freq * h * t) * 0.6 ** h for h in range(1, 7))
        return 1.3 * x * np.exp(-t / 0.18) * _env(n, sr, 0.002, 0.02)
    raise ValueError(f"unknown timbre {timbre!r}")


def render_melody(ev: Event, sr: int, rng: np.random.Generator) -> np.ndarray:
    """A melody filling ``ev.duration_s``: scale notes in ``ev.key`` at ``ev.tempo``."""
    scale = MAJOR if ev.key == "major" else MINOR
    note_s = rng.uniform(0.4, 0.6) if ev.tempo == "slow" else rng.uniform(0.13, 0.2)
    root = 220.0 * 2 ** (rng.integers(0, 12) / 12)
    total = int(ev.duration_s * sr)
    out = np.zeros(total)
    n = int(note_s * sr)
    degree = int(rng.integers(0, 4))
    for start in range(0, total - n + 1, n):
        degree = int(np.clip(degree + rng.choice([-2, -1, 1, 2]), 0, len(scale) - 1))
        out[start:start + n] += _note(ev.timbre or "sine", root * 2 ** (scale[degree] / 12), n, sr)
    return out


def render_event(ev: Event, sr: int, rng: np.random.Generator) -> np.ndarray:
    """Render ``ev`` into an array of ``ev.duration_s * sr`` samples, scaled by loudness."""
    total = int(ev.duration_s * sr)
    if ev.kind == "melody":
        x = render_melody(ev, sr, rng)
    elif ev.kind in REPEATABLE and ev.kind != "clicks":
        count = {"once": 1, "twice": 2, "repeatedly": int(rng.integers(3, 6))}[ev.repetition or "once"]
        slot = total // count
        unit = int(slot * rng.uniform(0.45, 0.65))
        x = np.zeros(total)
        for i in range(count):
            x[i * slot:i * slot + unit] += _unit(ev.kind, ev, unit, sr, rng)
    else:
        x = _unit(ev.kind, ev, total, sr, rng)
    peak = np.abs(x).max()
    return (x / peak if peak > 0 else x) * AMPLITUDE[ev.loudness]


def mix(events: list[Event], duration_s: float, sr: int, rng: np.random.Generator) -> np.ndarray:
    """Mix rendered events at their onsets over a faint noise floor; float32, peak <= 0.95."""
    total = int(duration_s * sr)
    out = 0.003 * rng.standard_normal(total)  # about -50 dBFS, avoids digital silence
    for ev in events:
        x = render_event(ev, sr, rng)
        start = int(ev.onset_s * sr)
        end = min(total, start + x.size)
        out[start:end] += x[: end - start]
    peak = np.abs(out).max()
    if peak > 0.95:
        out *= 0.95 / peak
    return out.astype(np.float32)
