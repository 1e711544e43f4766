"""Audio decoding and resampling with errors that name the file and the reason.

Decoding uses ``soundfile`` (libsndfile: WAV, FLAC, OGG/Vorbis, MP3), so no ffmpeg is
needed. Multichannel audio is averaged to mono. Resampling is polyphase
(``scipy.signal.resample_poly``), which is deterministic across machines.

libsndfile decodes MP3 with libmpg123, which writes its notes to the process's stderr
(file descriptor 2, below Python's ``sys.stderr``), such as ``warning: ID3v2: unrealistic
small tag lengh 0, skipping`` for a harmless malformed tag, on every open. While an MP3 is
opened, fd 2 is redirected and what the decoder wrote is logged instead: notes on ID3 tags
at DEBUG (shown with ``-v``), anything else as a warning naming the file.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from clapcap.data.truncation import cut_short
from clapcap.errors import InputError

logger = logging.getLogger(__name__)

SUPPORTED_SUFFIXES = (".wav", ".flac", ".ogg", ".oga", ".mp3", ".aiff", ".aif")
# fd 2 belongs to the whole process: threads decoding MP3s redirect it one at a time.
_STDERR_FD_LOCK = threading.Lock()


class AudioError(InputError, ValueError):
    """An audio file cannot be used; the message names the file and the reason."""

    def __init__(self, path: str | Path, reason: str):
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{path}: {reason}")


@contextmanager
def _decoder_stderr(path: Path) -> Iterator[None]:
    """Log what libmpg123 writes to fd 2 while ``path`` (an MP3) is opened (module docstring).

    Other formats, and a process without an fd 2, are left alone.
    """
    if path.suffix.lower() != ".mp3":
        yield
        return
    with _STDERR_FD_LOCK, tempfile.TemporaryFile() as sink:
        if sys.stderr is not None:
            sys.stderr.flush()  # what Python wrote before stays before
        try:
            saved = os.dup(2)
        except OSError:  # no stderr to redirect
            saved = None
        if saved is not None:
            os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            if saved is not None:
                os.dup2(saved, 2)
                os.close(saved)
            sink.seek(0)
            for line in sink.read().decode(errors="replace").splitlines():
                if "ID3" in line or "id3.c" in line:
                    logger.debug("%s: decoder: %s", path, line)
                elif line.strip():
                    logger.warning("%s: decoder: %s", path, line)


def resample(wave: np.ndarray, orig_sr: int, target_sr: int) -> np.ndarray:
    """Resample a mono float waveform from ``orig_sr`` to ``target_sr`` Hz (polyphase)."""
    if orig_sr == target_sr:
        return wave.astype(np.float32, copy=False)
    from scipy.signal import resample_poly

    ratio = Fraction(target_sr, orig_sr).limit_denominator(1000)
    out = resample_poly(wave.astype(np.float64), ratio.numerator, ratio.denominator)
    return out.astype(np.float32)


def load_audio(
    path: str | Path, target_sr: int | None = None, *, min_duration_s: float = 0.0
) -> tuple[np.ndarray, int]:
    """Decode ``path`` to a mono float32 waveform, resampled to ``target_sr`` if given.

    Returns:
        ``(wave, sample_rate)`` with ``wave`` of shape (T,).

    Raises:
        AudioError: when the file is missing, has an unsupported extension, is corrupt,
            is empty, is shorter than ``min_duration_s`` or contains NaN/inf samples.
    """
    import soundfile as sf

    path = Path(path)
    if not path.exists():
        raise AudioError(path, "file not found")
    if path.suffix.lower() not in SUPPORTED_SUFFIXES:
        raise AudioError(path, f"unsupported format {path.suffix!r}; supported: {', '.join(SUPPORTED_SUFFIXES)}")
    if path.stat().st_size == 0:
        raise AudioError(path, "empty file (0 bytes)")
    try:
        with _decoder_stderr(path):
            data, sr = sf.read(str(path), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, TypeError) as err:
        raise AudioError(path, f"cannot decode ({err})") from err
    if data.shape[0] == 0:
        raise AudioError(path, "no audio samples")
    wave = data.mean(axis=1)
    if not np.isfinite(wave).all():
        raise AudioError(path, "contains NaN or infinite samples")
    duration = wave.shape[0] / sr
    if duration < min_duration_s:
        raise AudioError(path, f"too short: {duration:.3f} s < minimum {min_duration_s:.3f} s")
    if target_sr is not None and target_sr != sr:
        wave = resample(wave, sr, target_sr)
        sr = target_sr
    return wave, int(sr)


def audio_info(path: str | Path, *, check_samples: bool = False) -> tuple[float, int]:
    """Return ``(duration_s, sample_rate)`` from the file header.

    With ``check_samples``, a file cut short (its header promises more than decodes, as an
    interrupted download leaves it; :mod:`clapcap.data.truncation`) is refused, and a file
    stored as floating point (WAV/AIFF/... ``FLOAT`` or ``DOUBLE`` subtypes) is also read block
    by block and refused when a sample is NaN or infinite. Integer PCM (and FLAC, which is
    integer) cannot hold such values and is not read, so the checks cost the headers, the last
    few thousand frames of a FLAC or MP3, and one decode of float files.

    Raises:
        AudioError: when the file is missing, inaccessible, empty or unreadable, or
            (``check_samples``) is cut short or holds NaN or infinite samples.
    """
    import soundfile as sf

    path = Path(path)
    try:
        if not path.exists():
            raise AudioError(path, "file not found")
        size = path.stat().st_size
    except OSError as err:  # e.g. a name longer than the filesystem allows
        raise AudioError(path, f"cannot access ({err.strerror or err})") from err
    if size == 0:
        raise AudioError(path, "empty file (0 bytes)")
    try:
        with _decoder_stderr(path):
            info = sf.info(str(path))
    except (sf.LibsndfileError, RuntimeError) as err:
        raise AudioError(path, f"cannot read header ({err})") from err
    if check_samples:
        with _decoder_stderr(path):
            cut = cut_short(path, info)
        if cut is not None:
            raise AudioError(path, cut)
    if info.frames <= 0:
        raise AudioError(path, "no audio samples")
    if check_samples and info.subtype in FLOAT_SUBTYPES:
        _check_finite(path, info.samplerate)
    return info.frames / info.samplerate, int(info.samplerate)


FLOAT_SUBTYPES = ("FLOAT", "DOUBLE")


def _check_finite(path: Path, sample_rate: int) -> None:
    """Raise AudioError naming the first non-finite sample's time (blocks of 2**16 frames)."""
    import soundfile as sf

    start = 0
    try:
        for block in sf.blocks(str(path), blocksize=1 << 16, dtype="float32", always_2d=True):
            bad = ~np.isfinite(block).all(axis=1)
            if bad.any():
                frame = start + int(np.argmax(bad))
                kind = "NaN" if np.isnan(block[bad]).any() else "infinite"
                raise AudioError(path, f"{kind} sample(s), first at frame {frame} "
                                       f"({frame / sample_rate:.3f} s); the file is corrupt or badly written")
            start += block.shape[0]
    except (sf.LibsndfileError, RuntimeError) as err:
        raise AudioError(path, f"cannot decode ({err})") from err


@dataclass
class LoadReport:
    """Files a dataset run skipped, each with its reason (never dropped silently)."""

    skipped: list[dict[str, str]] = field(default_factory=list)

    def add(self, err: AudioError) -> None:
        self.skipped.append({"path": str(err.path), "reason": err.reason})
        logger.warning("skipping %s: %s", err.path, err.reason)


def crop_wave(wave: np.ndarray, max_samples: int, mode: str = "head") -> np.ndarray:
    """Cut ``wave`` to at most ``max_samples`` samples, deterministically.

    Both CLAP pipelines crop clips longer than their window at a *random* offset
    (``np.random.randint``); cropping here first makes that branch unreachable.

    Raises:
        ValueError: on an unknown mode or a non 1-D wave.
    """
    wave = np.asarray(wave, dtype=np.float32)
    if wave.ndim != 1:
        raise ValueError(f"expected a mono 1-D waveform, found shape {wave.shape}")
    if wave.shape[0] <= max_samples:
        return wave
    if mode == "head":
        return wave[:max_samples]
    if mode == "center":
        start = (wave.shape[0] - max_samples) // 2
        return wave[start:start + max_samples]
    raise ValueError(f"unknown crop mode {mode!r}; expected 'head' or 'center'")
