"""The handcrafted log-mel statistics encoder."""

from __future__ import annotations

import numpy as np
import pytest

from clapcap.encoders.base import EncoderConfig
from clapcap.encoders.factory import create_encoder


def _tone(freq: float, seconds: float = 1.0) -> np.ndarray:
    t = np.arange(int(16000 * seconds)) / 16000
    return (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def test_shape_determinism_and_content():
    enc = create_encoder(EncoderConfig(name="lm", backend="logmel_stats"))
    waves = [_tone(300), _tone(3000), _tone(300, 0.02)]
    a, b = enc.embed_audio(waves), enc.embed_audio(waves)
    assert a.shape == (3, 145) and a.dtype == np.float32 and np.array_equal(a, b)
    # A low and a high tone put their energy in different mel bands.
    assert np.argmax(a[0, :64]) < np.argmax(a[1, :64])
    assert a[2, -1] == pytest.approx(0.002)  # duration / 10


def test_bad_wave_rejected():
    enc = create_encoder(EncoderConfig(name="lm", backend="logmel_stats"))
    with pytest.raises(ValueError, match="NaN"):
        enc.embed_audio([np.array([0.0, np.nan], dtype=np.float32)])
