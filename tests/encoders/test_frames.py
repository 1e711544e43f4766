"""Frame-level encoder: mean over real-audio frames only."""

import numpy as np
import pytest
import torch

from clapcap.encoders.base import AudioEncoder, AudioTextEncoder, EncoderConfig
from clapcap.encoders.factory import create_encoder


@pytest.fixture(scope="module")
def frames_encoder():
    return create_encoder(EncoderConfig(backend="hf_frames", batch_size=4))


def test_pooling_ignores_padding_frames(frames_encoder):
    rng = np.random.default_rng(0)
    waves = [rng.standard_normal(16000 * s).astype(np.float32) for s in (1, 3)]
    pooled, frames = frames_encoder.embed_audio_frames(waves)
    expected = frames_encoder.model._get_feat_extract_output_lengths(torch.tensor([16000, 48000])).tolist()
    assert [f.shape[0] for f in frames] == expected
    np.testing.assert_allclose(pooled[0], frames[0].mean(axis=0), rtol=1e-6)
    alone = frames_encoder.embed_audio([waves[0]])  # no padding at all
    np.testing.assert_allclose(pooled[0], alone[0], atol=1e-4)


def test_protocols(frames_encoder):
    assert isinstance(frames_encoder, AudioEncoder)
    assert not isinstance(frames_encoder, AudioTextEncoder)
    clap = create_encoder(EncoderConfig())
    assert isinstance(clap, AudioTextEncoder)
