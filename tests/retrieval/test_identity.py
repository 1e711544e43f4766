"""Checkpoint identity report on synthetic dumps (the laion/HF proof is in tests/encoders)."""

import json

import numpy as np
import pytest

from clapcap.data.dump import DumpError, EmbeddingDump, save_dump
from clapcap.retrieval.identity import DIFFERENT, NEAR, SAME, checkpoint_identity, identity_report


def _dump(seed=0, n=12, per=3, dim=16, noise=0.0, base_seed=None, order=None):
    rng = np.random.default_rng(seed if base_seed is None else base_seed)
    audio = rng.normal(size=(n, dim))
    idx = np.repeat(np.arange(n), per)
    text = audio[idx] + rng.normal(size=(idx.size, dim))
    if noise:
        r = np.random.default_rng(seed + 100)
        audio = audio + noise * r.normal(size=audio.shape)
        text = text + noise * r.normal(size=text.shape)
    ids, caps = [f"c{i}" for i in range(n)], [f"cap {j}" for j in range(idx.size)]
    if order is not None:  # reorder clips (and re-point captions) without changing content
        inv = np.argsort(order)
        audio, ids = audio[order], [ids[i] for i in order]
        idx = inv[idx]
    return EmbeddingDump(audio.astype(np.float32), text.astype(np.float32), idx.astype(np.int64), ids, caps,
                         {"pipeline": f"p{seed}", "checkpoint": "x"})


def test_same_weights_tiny_noise_is_same_checkpoint():
    rep = checkpoint_identity(_dump(0), _dump(1, base_seed=0, noise=1e-4))
    assert rep["verdict"] == SAME and rep["cross_pipeline_comparable"] is True
    assert rep["audio_cosine"]["min"] > 0.999 and rep["similarity"]["pearson"] > 0.9999
    assert set(rep["audio_cosine"]["per_item"]) == {f"c{i}" for i in range(12)}


def test_different_weights_are_flagged():
    rep = checkpoint_identity(_dump(0), _dump(5))
    assert rep["verdict"] == DIFFERENT and rep["cross_pipeline_comparable"] is False
    assert rep["verdict"] == "different checkpoints: cross-pipeline numeric parity is not attainable"
    assert rep["audio_cosine"]["mean"] < 0.5


def test_one_bad_caption_breaks_identity():
    a, b = _dump(0), _dump(0)
    b.text_embeds[4] = -b.text_embeds[4]
    rep = checkpoint_identity(a, b)
    assert rep["verdict"] == DIFFERENT and rep["text_cosine"]["min"] < -0.99


def test_rows_are_aligned_by_clip_id_and_caption():
    order = np.random.default_rng(3).permutation(12)
    rep = checkpoint_identity(_dump(0), _dump(0, order=order))
    assert rep["verdict"] == SAME and rep["similarity"]["max_abs_diff"] < 1e-6


def test_dimension_mismatch_is_different_not_an_error():
    rep = checkpoint_identity(_dump(0, dim=16), _dump(0, dim=8))
    assert rep["verdict"] == DIFFERENT and "audio_cosine" not in rep


def test_mismatched_data_raise():
    with pytest.raises(DumpError, match="different clips"):
        checkpoint_identity(_dump(0, n=12), _dump(0, n=10))
    b = _dump(0)
    b.captions[0] = "something else"
    with pytest.raises(DumpError, match="caption 0 of A"):
        checkpoint_identity(_dump(0), b)
    with pytest.raises(ValueError, match="cos_threshold"):
        checkpoint_identity(_dump(0), _dump(0), cos_threshold=1.5)


def test_report_file_and_cli(tmp_path):
    a, b = save_dump(_dump(0), tmp_path / "a.npz"), save_dump(_dump(7), tmp_path / "b.npz")
    rep = identity_report(a, b, tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text())["verdict"] == rep["verdict"] == DIFFERENT

    from clapcap.cli import main

    assert main(["retrieval", "identity", "--a", str(a), "--b", str(a), "--out", str(tmp_path / "s.json")]) == 0
    saved = json.loads((tmp_path / "s.json").read_text())
    assert saved["verdict"] == SAME and saved["a"] == str(a)
    assert main(["retrieval", "identity", "--a", str(a), "--b", str(tmp_path / "missing.npz"),
                 "--out", str(tmp_path / "t.json")]) == 2


def _strict_loads(text: str):
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def test_constant_embeddings_write_null_pearson_with_reason(tmp_path):
    """A constant similarity matrix has no Pearson correlation: null plus why, never NaN."""
    a, b = _dump(0, n=4, per=2), _dump(0, n=4, per=2)
    for d in (a, b):  # every clip and caption the same vector: every similarity is 1
        d.audio_embeds[:] = 1.0
        d.text_embeds[:] = 1.0
    pa, pb = save_dump(a, tmp_path / "a.npz"), save_dump(b, tmp_path / "b.npz")
    out = tmp_path / "identity.json"
    identity_report(pa, pb, out)
    sim = _strict_loads(out.read_text())["similarity"]
    assert sim["pearson"] is None and sim["pearson_reason"] == "undefined: constant similarities in A and B"
    assert sim["max_abs_diff"] == 0.0


def _clustered(noise=0.0, n=8, per=2, dim=32, seed=0):
    """Embeddings around one common direction, like a small random CLAP's: the caption x clip
    similarities spread little, so a light perturbation moves their correlation well before
    it moves any per-item cosine (noise 0.02: cosines >= 0.9996, similarity Pearson 0.969)."""
    rng = np.random.default_rng(seed)
    common = rng.normal(size=dim)
    audio = common + 0.1 * rng.normal(size=(n, dim))
    idx = np.repeat(np.arange(n), per)
    text = common + 0.1 * rng.normal(size=(n * per, dim))
    if noise:
        r = np.random.default_rng(seed + 1)
        audio, text = audio + noise * r.normal(size=audio.shape), text + noise * r.normal(size=text.shape)
    return EmbeddingDump(audio.astype(np.float32), text.astype(np.float32), idx.astype(np.int64),
                         [f"c{i}" for i in range(n)], [f"cap {j}" for j in range(n * per)], {})


def test_verdict_uses_the_similarity_statistics():
    """A light fine-tune passes every per-item cosine but not the similarity statistics: it is
    near-identical, not the same checkpoint (it was "same checkpoint" at Pearson 0.97)."""
    same = checkpoint_identity(_clustered(), _clustered())
    assert same["verdict"] == SAME and same["cross_pipeline_comparable"] is True
    near = checkpoint_identity(_clustered(), _clustered(noise=0.02))
    assert min(near["audio_cosine"]["min"], near["text_cosine"]["min"]) > 0.999
    assert 0.95 < near["similarity"]["pearson"] < 0.98 and near["similarity"]["max_abs_diff"] > 1e-3
    assert near["verdict"] == NEAR and near["cross_pipeline_comparable"] is False
    assert near["checks"] == {"cosines": True, "pearson": False, "max_abs_diff": False}
    assert near["pearson_threshold"] == 0.999 and near["max_abs_diff_threshold"] == 1e-3
    other = checkpoint_identity(_clustered(), _clustered(seed=5))
    assert other["verdict"] == DIFFERENT and other["cross_pipeline_comparable"] is False
    # Each statistic gates on its own.
    loose = checkpoint_identity(_clustered(), _clustered(noise=0.02), pearson_threshold=0.9,
                                max_abs_diff_threshold=0.01)
    assert loose["verdict"] == SAME
    assert checkpoint_identity(_clustered(), _clustered(noise=0.02), pearson_threshold=0.9)["verdict"] == NEAR
    with pytest.raises(ValueError, match="pearson_threshold"):
        checkpoint_identity(_clustered(), _clustered(), pearson_threshold=1.5)
    with pytest.raises(ValueError, match="max_abs_diff_threshold"):
        checkpoint_identity(_clustered(), _clustered(), max_abs_diff_threshold=-1)


def test_cli_identity_thresholds(tmp_path, capsys):
    from clapcap.cli import main

    a, b = save_dump(_clustered(), tmp_path / "a.npz"), save_dump(_clustered(noise=0.02), tmp_path / "b.npz")
    assert main(["retrieval", "identity", "--a", str(a), "--b", str(b), "--out", str(tmp_path / "n.json")]) == 0
    assert json.loads((tmp_path / "n.json").read_text())["verdict"] == NEAR
    assert main(["retrieval", "identity", "--a", str(a), "--b", str(b), "--out", str(tmp_path / "s.json"),
                 "--pearson-threshold", "0.9", "--max-abs-diff-threshold", "0.01"]) == 0
    assert json.loads((tmp_path / "s.json").read_text())["verdict"] == SAME
