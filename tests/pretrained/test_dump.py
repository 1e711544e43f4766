"""``embed_dataset`` with a pretrained encoder: a dump in the project's format, of one source, skipped when complete,
resumed after a crash, with no machine path inside."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import clapcap.encoders.embed as embed_mod
from clapcap.data.dump import load_dump
from clapcap.encoders.base import PretrainedEncoderConfig
from clapcap.encoders.embed import dump_path, embed_dataset
from clapcap.encoders.factory import create_encoder
from clapcap.encoders.partial import partial_dir

CFG = PretrainedEncoderConfig(name="aisfx", backend="aisfx", batch_size=3)


@pytest.fixture(scope="module")
def aisfx():
    return create_encoder(CFG)


@pytest.fixture(scope="module")
def music_ids(tiny_corpus):
    df = pd.read_csv(tiny_corpus / "manifest.csv")
    ids = df.loc[df["source"] == "synthetic_music", "clip_id"].tolist()
    assert 4 <= len(ids) < len(df)
    return ids


def test_music_dump_readable_and_portable(tiny_corpus, tmp_path, aisfx, music_ids):
    out = dump_path(tmp_path, "aisfx", "tiny", "all", source="synthetic_music")
    assert out.name == "all__synthetic_music.npz"
    embed_dataset(CFG, tiny_corpus, "all", out, source="synthetic_music", save_frames=True, progress=False,
                     encoder=aisfx)
    dump = load_dump(out)
    assert dump.clip_ids == music_ids
    assert dump.audio_embeds.shape == (len(music_ids), 512) and dump.audio_embeds.dtype == np.float32
    assert dump.text_embeds.shape == (len(dump.captions), 512) and not dump.text_embeds.any()
    assert dump.meta["text_tower"] is False and dump.meta["source_filter"] == "synthetic_music"
    assert dump.meta["pipeline"] == "pretrained/aisfx" and "encoder" not in dump.meta
    frames, mask = dump.extras["audio_frames"], dump.extras["audio_frame_mask"]
    pooled = (frames.astype(np.float64) * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    np.testing.assert_allclose(pooled, dump.audio_embeds, rtol=1e-2, atol=1e-3)  # frames are float16
    raw = out.read_bytes()
    assert str(tmp_path).encode() not in raw and str(tiny_corpus).encode() not in raw


def test_complete_dump_is_skipped(tiny_corpus, tmp_path, aisfx, monkeypatch):
    out = tmp_path / "d.npz"
    embed_dataset(CFG, tiny_corpus, "all", out, source="synthetic_music", max_clips=3, progress=False,
                     encoder=aisfx)
    before = out.read_bytes()

    def refuse(*_a, **_k):
        raise AssertionError("a complete dump was recomputed")

    monkeypatch.setattr(embed_mod, "create_encoder", refuse)
    monkeypatch.setattr(embed_mod, "embed_audio_rows", refuse)
    assert embed_dataset(CFG, tiny_corpus, "all", out, source="synthetic_music", max_clips=3,
                         progress=False) == out
    assert out.read_bytes() == before


class _CrashAfter:
    """Wraps an encoder and raises on its ``n``-th call (a killed run)."""

    def __init__(self, inner, n):
        self.inner, self.n, self.sample_rate, self.pipeline = inner, n, inner.sample_rate, inner.pipeline

    def embed_audio(self, waves):
        self.n -= 1
        if self.n < 0:
            raise KeyboardInterrupt
        return self.inner.embed_audio(waves)

    def describe(self):
        return self.inner.describe()


def test_resume_after_crash_is_byte_identical(tiny_corpus, tmp_path, aisfx):
    clean, resumed = tmp_path / "clean.npz", tmp_path / "resumed.npz"
    embed_dataset(CFG, tiny_corpus, "all", clean, source="synthetic_music", progress=False, encoder=aisfx)
    with pytest.raises(KeyboardInterrupt):
        embed_dataset(CFG, tiny_corpus, "all", resumed, source="synthetic_music", progress=False,
                         encoder=_CrashAfter(aisfx, 1))
    assert not resumed.exists() and (partial_dir(resumed) / "audio_000000.npz").is_file()
    counting = _CrashAfter(aisfx, 10**6)
    embed_dataset(CFG, tiny_corpus, "all", resumed, source="synthetic_music", progress=False, encoder=counting)
    n_batches = -(-len(load_dump(clean).clip_ids) // CFG.batch_size)
    assert 10**6 - counting.n == n_batches - 1  # the first batch was read back
    assert resumed.read_bytes() == clean.read_bytes() and not partial_dir(resumed).exists()


def test_unknown_source_lists_the_sources(tiny_corpus, tmp_path):
    with pytest.raises(ValueError, match=r"no clip of source 'music'; its sources: \['synthetic', 'synthetic_music'\]"):
        embed_dataset(CFG, tiny_corpus, "all", tmp_path / "x.npz", source="music", progress=False)


def test_a_section_embeds_each_encoder_on_its_own_dataset(tiny_corpus, tmp_path, aisfx, music_ids, monkeypatch):
    """``datasets``: the specialist embeds the subset it is specialised for, under that subset's name."""
    import json
    import os

    from clapcap.config import ConfigError, from_dict
    from clapcap.data.prepare import load_dataset
    from clapcap.encoders.config import EmbedPretrainedParams
    from clapcap.encoders.embed import embed_pretrained_splits

    music = tmp_path / "subsets" / "tunes"  # the music clips, in every split the corpus has ("all")
    music.mkdir(parents=True)
    df = pd.read_csv(tiny_corpus / "manifest.csv")
    df[df["source"] == "synthetic_music"].to_csv(music / "manifest.csv", index=False)
    (music / "dataset.json").write_text(json.dumps({"root": os.path.relpath(load_dataset(tiny_corpus).root, music),
                                                    "source": "synthetic"}))
    monkeypatch.setattr(embed_mod, "create_encoder", lambda cfg: aisfx)
    params = EmbedPretrainedParams(dataset_dir=str(tiny_corpus), dataset="tiny", out_dir=str(tmp_path / "emb"),
                                   splits=["all"], encoders={"aisfx": CFG}, datasets={"aisfx": "tunes"},
                                   datasets_dir=str(music.parent))
    out, = embed_pretrained_splits(params, "aisfx", progress=False)
    assert out == tmp_path / "emb" / "aisfx" / "tunes" / "all.npz"
    assert load_dump(out).clip_ids == music_ids
    with pytest.raises(ConfigError, match=r"datasets: \['crepe'\] are not among the encoders"):
        from_dict(EmbedPretrainedParams, {"encoders": {}, "datasets": {"crepe": "x"}, "datasets_dir": "data"})
    with pytest.raises(ConfigError, match="needs datasets_dir"):
        from_dict(EmbedPretrainedParams, {"encoders": {"aisfx": {"name": "aisfx", "backend": "aisfx"}},
                                          "datasets": {"aisfx": "effects"}})
