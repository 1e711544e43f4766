"""embed_dataset: dump contract, skip-when-complete, caption columns, frame extras."""

import numpy as np
import pytest

from clapcap.config import ConfigError
from clapcap.data.dump import load_dump
from clapcap.encoders.base import EncoderConfig
from clapcap.encoders.config import EmbedParams
from clapcap.encoders.embed import dump_path, embed_all, embed_dataset


def test_dump_contract_and_skip(tiny_corpus, tmp_path, monkeypatch):
    cfg = EncoderConfig(name="tiny", batch_size=8)
    out = embed_dataset(cfg, tiny_corpus, "test", tmp_path / "d.npz", progress=False)
    dump = load_dump(out)
    dump.validate(require_every_clip_captioned=True)
    assert dump.audio_embeds.dtype == np.float32 and dump.caption_clip_index.dtype == np.int64
    assert dump.n_captions == 5 * dump.n_clips
    assert dump.meta["pipeline"] == "hf_transformers" and dump.meta["split"] == "test"
    assert dump.meta["preprocessing"]["truncation"] == "rand_trunc" and dump.meta["checkpoint"]
    assert dump.captions[0] in dump.captions

    import clapcap.encoders.embed as mod

    monkeypatch.setattr(mod, "create_encoder", lambda _cfg: pytest.fail("complete dump recomputed"))
    mtime = out.stat().st_mtime_ns
    embed_dataset(cfg, tiny_corpus, "test", out, progress=False)
    assert out.stat().st_mtime_ns == mtime


def test_paraphrase_columns_and_errors(tiny_corpus, tmp_path):
    cfg = EncoderConfig(name="tiny", batch_size=8)
    out = embed_dataset(cfg, tiny_corpus, "val", tmp_path / "p.npz", caption_column="paraphrases_v2", progress=False)
    dump = load_dump(out)
    assert dump.meta["caption_column"] == "paraphrases_v2" and dump.n_captions >= dump.n_clips
    with pytest.raises(ValueError, match="no column 'nope'"):
        embed_dataset(cfg, tiny_corpus, "val", tmp_path / "x.npz", caption_column="nope", progress=False)
    with pytest.raises(ValueError, match="split 'dev' has no clips"):
        embed_dataset(cfg, tiny_corpus, "dev", tmp_path / "y.npz", progress=False)


def test_frame_encoder_dump_has_frames(tiny_corpus, tmp_path):
    cfg = EncoderConfig(name="w2v", backend="hf_frames", batch_size=4)
    dump = load_dump(embed_dataset(cfg, tiny_corpus, "val", tmp_path / "f.npz", max_clips=3, save_frames=True,
                                   progress=False))
    assert dump.meta["text_tower"] is False and not dump.text_embeds.any()
    frames, mask = dump.extras["audio_frames"], dump.extras["audio_frame_mask"]
    assert frames.shape[0] == 3 and mask.shape == frames.shape[:2]
    np.testing.assert_allclose(dump.audio_embeds[0], frames[0][mask[0]].astype(np.float32).mean(0), atol=2e-3)


def test_embed_all_names_dumps(tiny_corpus, tmp_path):
    params = EmbedParams(out_dir=str(tmp_path), datasets={"tiny": str(tiny_corpus)}, splits=["val"],
                         caption_columns=["captions", "paraphrases_v1"],
                         encoders={"rand": EncoderConfig(name="rand", batch_size=8)})
    paths = embed_all(params, "rand", "tiny", progress=False)
    assert paths == [dump_path(tmp_path, "rand", "tiny", "val"),
                     dump_path(tmp_path, "rand", "tiny", "val", "paraphrases_v1")]
    assert all(p.is_file() for p in paths)
    with pytest.raises(ConfigError, match="known: \\['rand'\\]"):
        embed_all(params, "other", "tiny")


def test_embed_params_build_list_and_per_encoder_splits():
    encoders = {"a": EncoderConfig(name="a"), "b": EncoderConfig(name="b")}
    params = EmbedParams(splits=["train", "test"], encoders=encoders, build=["a"], encoder_splits={"b": ["test"]})
    assert params.splits_of("a") == ["train", "test"] and params.splits_of("b") == ["test"]
    with pytest.raises(ValueError, match=r"embed.build: \['c'\] not in embed.encoders"):
        EmbedParams(encoders=encoders, build=["c"])
    with pytest.raises(ValueError, match="embed.encoder_splits"):
        EmbedParams(encoders=encoders, encoder_splits={"c": ["test"]})


def test_embed_refuses_audio_replaced_after_prepare(tmp_path, make_clotho, write_wav, monkeypatch):
    """Old code: ``clapcap data validate`` noticed, embed dumped the stale dataset without a word."""
    from clapcap.data.config import DataParams, ExternalSource
    from clapcap.data.prepare import StaleDatasetError, prepare_data

    monkeypatch.chdir(tmp_path)  # the listing's hash memo (.cache/clapcap) goes here
    root = make_clotho(tmp_path / "ds")
    prepare_data(DataParams(source="clotho", out_dir="corpus",
                            external=ExternalSource(root="ds", csv={"test": "captions.csv"})), progress=False)
    cfg = EncoderConfig(name="tiny", batch_size=8)
    assert load_dump(embed_dataset(cfg, "corpus", "test", "ok.npz", progress=False)).n_clips == 3
    write_wav(root / "audio" / "clip1.wav", freq=999.0)  # replaced after prepare
    (root / "audio" / "clip2.wav").unlink()
    with pytest.raises(StaleDatasetError, match=r"^corpus/dataset.json was built from other input files: "
                                                r"audio/clip1.wav \(changed\), audio/clip2.wav \(removed\): "
                                                r"rerun prepare"):
        embed_dataset(cfg, "corpus", "test", "stale.npz", progress=False)
    assert not (tmp_path / "stale.npz").exists()
