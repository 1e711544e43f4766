"""Retrieval metrics at scale: the screened numpy path and the torch path give the float64 path's numbers.

The float64 path (``screen=False``) is the implementation the metrics had before the screen;
every per-query value of the other paths must equal it bit for bit, on dumps built to hold
exact ties (duplicate clips and captions, zero rows, positives tied with negatives) and
near-ties (scores closer than the float32 product's error), with multi-positive clips of
uneven caption counts.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import numpy as np
import pytest

from clapcap.data.dump import EmbeddingDump, normalize
from clapcap.retrieval import metrics
from clapcap.retrieval.evaluate import evaluate_file, resolve_device
from clapcap.retrieval.independent import independent_metrics
from clapcap.retrieval.metrics import per_query_dump, per_query_metrics, similarity
from clapcap.retrieval.screen import NearTieOverflow, exact_scores, screened_counts

ROOT = Path(__file__).resolve().parents[2]
BLOCKS = (1, 700, 5000, 1 << 28)  # one row per block, a few rows, whole matrix


def _dump(audio: np.ndarray, text: np.ndarray, idx: np.ndarray) -> EmbeddingDump:
    return EmbeddingDump(np.asarray(audio, np.float32), np.asarray(text, np.float32),
                         np.asarray(idx, np.int64), [f"c{i}" for i in range(len(audio))],
                         [f"t{j}" for j in range(len(text))])


def tied_dump(seed: int = 0, n_clips: int = 30, dim: int = 8) -> EmbeddingDump:
    """Multi-positive (1..6 captions per clip, shuffled) with exact ties of every kind."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 7, size=n_clips)
    idx = rng.permutation(np.repeat(np.arange(n_clips), counts))
    audio = rng.normal(size=(n_clips, dim))
    text = audio[idx] + 1.5 * rng.normal(size=(idx.size, dim))
    audio[1] = audio[0]  # duplicate clips: every caption ties them
    audio[2] = audio[idx[5]]  # a negative clip equal to caption 5's positive
    text[3] = text[4]  # duplicate captions (same or different clips)
    text[7] = text[np.flatnonzero(idx == idx[7])[-1]]  # two positives of one clip tied
    text[9] = text[np.flatnonzero(idx != idx[9])[0]]  # a positive tied with a negative caption
    audio[4] = 0.0  # zero rows tie with everything at score 0
    text[11] = 0.0
    return _dump(audio, text, idx)


def near_tie_dump(seed: int = 0, n_clips: int = 12, dim: int = 64) -> EmbeddingDump:
    """Captions and clips that differ by ~1e-7: their scores differ below the float32 product's error."""
    rng = np.random.default_rng(seed)
    base_a, base_t = rng.normal(size=dim), rng.normal(size=dim)
    audio = base_a + 3e-7 * rng.normal(size=(n_clips, dim))
    idx = rng.permutation(np.repeat(np.arange(n_clips), rng.integers(1, 5, size=n_clips)))
    text = base_t + 3e-7 * rng.normal(size=(idx.size, dim))
    return _dump(audio, text, idx)


def assert_same_per_query(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for direction in a:
        assert a[direction].keys() == b[direction].keys()
        for key in a[direction]:
            np.testing.assert_array_equal(a[direction][key], b[direction][key], err_msg=f"{direction} {key}")


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("block", BLOCKS)
def test_screened_path_equals_float64_path_with_ties(seed, block):
    dump = tied_dump(seed)
    ref = per_query_dump(dump, screen=False, max_block_bytes=block)
    for laion in (False, True):
        assert_same_per_query(
            per_query_dump(dump, max_block_bytes=block, laion_compatible=laion),
            per_query_dump(dump, screen=False, max_block_bytes=block, laion_compatible=laion))
    assert_same_per_query(per_query_dump(dump, max_block_bytes=block), ref)


@pytest.mark.parametrize("seed", range(4))
def test_near_ties_need_and_get_the_float64_check(seed):
    dump = near_tie_dump(seed)
    # The data must matter: ranking the float32 product directly gives other ranks here.
    naive = (normalize(dump.text_embeds).astype(np.float32)
             @ normalize(dump.audio_embeds).astype(np.float32).T)
    exact = per_query_metrics(similarity(dump), dump.caption_clip_index)
    differs = any(not np.array_equal(per_query_metrics(naive, dump.caption_clip_index)[d]["rank"],
                                     exact[d]["rank"]) for d in ("t2a", "a2t"))
    assert differs, "the near-tie dump no longer has near-ties that float32 gets wrong"
    for block in BLOCKS:
        assert_same_per_query(per_query_dump(dump, max_block_bytes=block), exact)
        assert_same_per_query(per_query_dump(dump, max_block_bytes=block, screen=False), exact)


def test_screened_path_agrees_with_the_independent_reference():
    dump = tied_dump(7)
    ours = metrics.evaluate_dump(dump)
    ref = independent_metrics(dump.audio_embeds, dump.text_embeds, dump.caption_clip_index)
    for direction in ("t2a", "a2t"):
        for key, value in ref[direction].items():
            assert abs(ours[direction][key] - value) <= 1e-12, (direction, key)


def test_exact_scores_do_not_depend_on_their_batch():
    rng = np.random.default_rng(0)
    text, audio = normalize(rng.normal(size=(50, 37))), normalize(rng.normal(size=(20, 37)))
    rows, cols = rng.integers(0, 50, 3000), rng.integers(0, 20, 3000)
    full = exact_scores(text, audio, rows, cols)
    for i in (0, 1, 17, 2999):
        one = exact_scores(text, audio, rows[i:i + 1], cols[i:i + 1])
        assert one.tobytes() == full[i:i + 1].tobytes()
    shifted = exact_scores(text[1:], audio, rows[rows > 0] - 1, cols[rows > 0])
    assert shifted.tobytes() == full[rows > 0].tobytes()


def test_too_many_near_ties_fall_back_to_float64(monkeypatch, caplog):
    dump = _dump(np.ones((6, 4)), np.ones((14, 4)), np.repeat(np.arange(6), [1, 2, 3, 4, 2, 2]))
    text, audio = normalize(dump.text_embeds), normalize(dump.audio_embeds)
    with pytest.raises(NearTieOverflow):
        screened_counts(text, audio, dump.caption_clip_index, block_bytes=1 << 20, max_near_ties=10)
    ref = per_query_dump(dump, screen=False)

    def overflow(*args, **kwargs):
        raise NearTieOverflow("test")

    monkeypatch.setattr(metrics, "screened_counts", overflow)
    with caplog.at_level(logging.INFO, logger="clapcap.retrieval.metrics"):
        assert_same_per_query(per_query_dump(dump, origin="collapsed.npz"), ref)
    assert "collapsed.npz: many near-tied scores" in caplog.text


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("block", (1, 5000, 1 << 28))
def test_torch_path_equals_numpy_path_on_cpu_tensors(seed, block):
    pytest.importorskip("torch")
    for dump in (tied_dump(seed), near_tie_dump(seed)):
        ref = per_query_dump(dump, max_block_bytes=block)
        for laion in (False, True):
            assert_same_per_query(
                per_query_dump(dump, max_block_bytes=block, device="cpu", laion_compatible=laion),
                per_query_dump(dump, max_block_bytes=block, laion_compatible=laion))
        assert_same_per_query(per_query_dump(dump, max_block_bytes=block, device="cpu"), ref)


@pytest.mark.gpu
def test_cuda_path_equals_numpy_path():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    for dump in (tied_dump(0), near_tie_dump(0), tied_dump(1, n_clips=2000, dim=512)):
        assert_same_per_query(per_query_dump(dump, device="cuda", max_block_bytes=1 << 22),
                              per_query_dump(dump))


def test_resolve_device_never_falls_back_silently(monkeypatch):
    torch = pytest.importorskip("torch")
    assert resolve_device(None) is None and resolve_device("cpu") is None
    with pytest.raises(ValueError, match="expected auto, cpu, cuda"):
        resolve_device("tpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") is None
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        resolve_device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == "cuda" and resolve_device("cuda:1") == "cuda:1"


def test_evaluate_file_takes_a_device_setting(tmp_path, dump_file, monkeypatch):
    torch = pytest.importorskip("torch")
    path = dump_file(n_clips=15, captions_per_clip=[1, 2, 3] * 5)
    plain = evaluate_file(path, bootstrap=0)
    assert evaluate_file(path, bootstrap=0, device="cpu") == plain
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert evaluate_file(path, bootstrap=0, device="auto") == plain
    with pytest.raises(RuntimeError, match="CUDA"):
        evaluate_file(path, tmp_path / "never.json", bootstrap=0, device="cuda")
    assert not (tmp_path / "never.json").exists()


def test_scale_benchmark_runs_tiny(capsys):
    pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("retrieval_scale", ROOT / "benchmarks" / "retrieval_scale.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = bench.main(["--clips", "60", "--captions", "200", "--dim", "16", "--device", "cpu",
                      "--with-float64"])
    assert set(out) >= {"floor", "cpu (evaluate_dump, numpy, screened)", "torch_max_abs_diff"}
    assert out["torch_max_abs_diff"] == 0.0
    printed = capsys.readouterr().out
    assert "1.00x" in printed and "max |torch - cpu| = 0" in printed and "same metrics: True" in printed
