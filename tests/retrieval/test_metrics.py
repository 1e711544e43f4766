"""Retrieval metrics: hand-computed cases, ties, chunking, LAION convention, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from retrieval_cases import a2t_case

from clapcap.data.dump import DumpError, EmbeddingDump, load_dump
from clapcap.retrieval.metrics import (
    aggregate,
    evaluate_dump,
    metric_names,
    per_query_dump,
    per_query_metrics,
    retrieval_metrics,
    similarity,
)

KEYS = ["r@1", "r@5", "r@10", "map", "map@10", "mrr", "median_rank"]


def test_two_clip_case_by_hand():
    # captions 0, 2 describe clip 0; captions 1, 3 describe clip 1
    sim = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5], [0.3, 0.7]], dtype=np.float32)
    out = retrieval_metrics(sim, np.array([0, 1, 0, 1]))
    assert list(out) == ["t2a", "a2t", "n_clips", "n_captions", "multi_positive"]
    assert list(out["t2a"]) == KEYS and list(out["a2t"]) == KEYS
    # caption 2 ties its positive with the other clip: pessimistic rank 2; others rank 1
    assert out["t2a"]["r@1"] == 0.75
    assert out["t2a"]["mrr"] == pytest.approx((1 + 1 + 0.5 + 1) / 4)
    assert out["t2a"]["map"] == out["t2a"]["mrr"]  # one positive: AP = 1/rank
    assert out["t2a"]["median_rank"] == 1.0
    # clip 0 column: 0.9 (pos), 0.5 (pos), 0.3, 0.2 -> positives at 1, 2 -> AP 1
    assert out["a2t"] == {k: 1.0 for k in KEYS}
    assert (out["n_clips"], out["n_captions"], out["multi_positive"]) == (2, 4, True)


def test_average_precision_by_hand():
    sim, idx = a2t_case([2, 8, 12], n_captions=12)
    pq = per_query_metrics(sim, idx)["a2t"]
    assert pq["map"][0] == pytest.approx((1 / 2 + 2 / 8 + 3 / 12) / 3)
    # map@10 keeps ranks <= 10 but still divides by all 3 positives (trec map_cut_10)
    assert pq["map@10"][0] == pytest.approx((1 / 2 + 2 / 8) / 3)
    assert pq["mrr"][0] == 0.5 and pq["rank"][0] == 2
    assert (pq["r@1"][0], pq["r@5"][0], pq["r@10"][0]) == (0.0, 1.0, 1.0)


def test_pessimistic_ties_put_positive_below_equal_negatives():
    # one caption; clips 0..3 all score 0.5 and the positive is clip 2 -> rank 4 (last)
    sim = np.full((4, 4), 0.5)
    pq = per_query_metrics(sim, np.arange(4))
    assert (pq["t2a"]["rank"] == 4).all() and (pq["a2t"]["rank"] == 4).all()
    # tied positives take consecutive positions after the tied negatives
    sim2, idx2 = a2t_case([1, 2, 3], n_captions=6)
    sim2[:, 0] = 0.5
    pq2 = per_query_metrics(sim2, idx2)["a2t"]
    assert pq2["map"][0] == pytest.approx((1 / 4 + 2 / 5 + 3 / 6) / 3)


@pytest.mark.parametrize("captions_per_clip", [1, 5])
def test_constant_encoder_scores_at_or_below_chance(captions_per_clip):
    n_clips, k = 50, captions_per_clip
    dump = EmbeddingDump(np.ones((n_clips, 4), np.float32), np.ones((n_clips * k, 4), np.float32),
                         np.repeat(np.arange(n_clips), k), [f"c{i}" for i in range(n_clips)],
                         [f"t{i}" for i in range(n_clips * k)])
    out = evaluate_dump(dump)
    for kk in (1, 5, 10):
        assert out["t2a"][f"r@{kk}"] <= kk / n_clips
        assert out["a2t"][f"r@{kk}"] <= min(1.0, kk * k / (n_clips * k))
    assert out["t2a"]["r@1"] == 0.0 and out["a2t"]["r@1"] == 0.0
    assert out["t2a"]["mrr"] == pytest.approx(1 / n_clips)  # always ranked last
    assert out["t2a"]["median_rank"] == n_clips
    # random ranking: expected AP >= |P| / N = 1 / n_clips; last place is below that
    assert out["a2t"]["map"] <= 1 / n_clips and out["t2a"]["map"] <= 1 / n_clips
    assert out["a2t"]["median_rank"] == n_clips * k - k + 1


def test_chunked_equals_unchunked_and_matrix_path(make_dump):
    dump = make_dump(n_clips=37, captions_per_clip=[1, 2, 3, 5, 7] * 7 + [1, 4])
    full = evaluate_dump(dump)
    for block in (1, 500, 5000):
        assert evaluate_dump(dump, max_block_bytes=block) == full
    sim = similarity(dump)
    assert retrieval_metrics(sim, dump.caption_clip_index, max_block_bytes=700) == full


def test_per_query_aggregates_to_corpus_values(make_dump):
    dump = make_dump(n_clips=20, captions_per_clip=3)
    pq = per_query_dump(dump)
    assert pq["t2a"]["map"].shape == (60,) and pq["a2t"]["map"].shape == (20,)
    agg = aggregate(pq)
    out = evaluate_dump(dump)
    assert agg["t2a"] == out["t2a"] and agg["a2t"] == out["a2t"]


def test_custom_ks():
    sim = np.eye(3)
    out = retrieval_metrics(sim, np.arange(3), ks=(2, 3))
    assert list(out["t2a"]) == metric_names((2, 3))
    with pytest.raises(ValueError, match="ks"):
        retrieval_metrics(sim, np.arange(3), ks=(0,))


# ------------------------------------------------------------------- LAION convention
def test_laion_map_at_10_differs_on_hand_built_case():
    # clip 0 has 5 captions; in caption order they rank 5, 4, 3, 2, 1 (all in the top 10)
    sim, idx = a2t_case([5, 4, 3, 2, 1], n_captions=12)
    correct = per_query_metrics(sim, idx)["a2t"]["map@10"][0]
    laion = per_query_metrics(sim, idx, laion_compatible=True)["a2t"]["map@10"][0]
    assert correct == pytest.approx(1.0)  # all positives on top: perfect
    # LAION sums j / rank_j in caption (unsorted) order: above 1 for one clip
    assert laion == pytest.approx((1 / 5 + 2 / 4 + 3 / 3 + 4 / 2 + 5 / 1) / 5)
    assert laion > 1


def _laion_style_a2t_map10(sim: np.ndarray, per_clip: int) -> float:
    """LAION-CLAP's evaluate_clotho_audiocaps a2t mAP@10, re-expressed with torch."""
    import torch

    logits_per_audio = torch.from_numpy(sim.T.copy())  # (n_clips, n_clips * per_clip)
    values = []
    for d in range(logits_per_audio.shape[0]):
        ranking = torch.argsort(logits_per_audio[d], descending=True)
        truth = torch.arange(d * per_clip, (d + 1) * per_clip)
        found = torch.nonzero(ranking[None, :] == truth[:, None])[:, 1]  # caption order
        kept = found[found < 10].numpy()
        values.append(np.sum(np.arange(1, len(kept) + 1) / (kept + 1)) / per_clip)
    return float(np.mean(values))


def test_laion_compatible_reproduces_laion_formula(make_dump):
    dump = make_dump(n_clips=30, captions_per_clip=5, noise=0.8, seed=3)
    sim = similarity(dump)
    ours = retrieval_metrics(sim, dump.caption_clip_index, laion_compatible=True)
    default = retrieval_metrics(sim, dump.caption_clip_index)
    assert ours["a2t"]["map@10"] == pytest.approx(_laion_style_a2t_map10(sim, 5), abs=1e-12)
    assert ours["a2t"]["map@10"] > default["a2t"]["map@10"]
    # only a2t map@10 changes
    assert ours["t2a"] == default["t2a"]
    assert {k: v for k, v in ours["a2t"].items() if k != "map@10"} == \
        {k: v for k, v in default["a2t"].items() if k != "map@10"}


# ------------------------------------------------------------------------ bad input
def _dump(**override) -> EmbeddingDump:
    base = dict(audio_embeds=np.eye(3, dtype=np.float32), text_embeds=np.eye(3, dtype=np.float32),
                caption_clip_index=np.arange(3), clip_ids=["a", "b", "c"], captions=["x", "y", "z"])
    base.update(override)
    return EmbeddingDump(**base)


@pytest.mark.parametrize("override, message", [
    (dict(text_embeds=np.eye(3, 4, dtype=np.float32)), "embedding dims differ"),
    (dict(caption_clip_index=np.arange(2)), r"caption_clip_index has shape \(2,\), expected \(3,\)"),
    (dict(caption_clip_index=np.array([0, 1, 3])), "caption 2 points to clip row 3, outside 0..2"),
    (dict(caption_clip_index=np.array([0, 1, 1])), "clip 'c' \\(row 2\\) has no caption"),
    (dict(audio_embeds=np.array([[1, 0, 0], [0, np.nan, 0], [0, 0, 1]], np.float32)),
     "audio_embeds row 1 has NaN or infinite"),
    (dict(text_embeds=np.array([[1, 0, 0], [0, 1, 0], [0, 0, np.inf]], np.float32)),
     "text_embeds row 2 has NaN or infinite"),
    (dict(audio_embeds=np.zeros((0, 3), np.float32), clip_ids=[]), "empty dump"),
    (dict(clip_ids=["a", "b"]), "2 clip_ids for 3 clips"),
])
def test_bad_dumps_raise_clear_errors(override, message):
    with pytest.raises(DumpError, match=message):
        evaluate_dump(_dump(**override), origin="bad.npz")
    with pytest.raises(DumpError, match="bad.npz"):
        evaluate_dump(_dump(**override), origin="bad.npz")


def test_bad_dump_file_is_named(tmp_path):
    path = tmp_path / "broken.npz"
    np.savez(path, audio_embeds=np.eye(2, dtype=np.float32))
    with pytest.raises(DumpError, match=r"broken.npz: missing key\(s\)"):
        load_dump(path)


@pytest.mark.parametrize("sim, idx, message", [
    (np.zeros((0, 3)), np.zeros(0, int), "non-empty"),
    (np.eye(3), np.arange(2), "caption_clip_index has shape"),
    (np.eye(3), np.array([0, 1, 5]), "caption 2 points to clip row 5"),
    (np.eye(3), np.array([0, 1, 1]), "clip row 2 has no caption"),
    (np.array([[1.0, np.nan], [0, 1]]), np.arange(2), "row 0 has NaN"),
    (np.eye(2), np.array([0.0, 1.0]), "must hold integers"),
])
def test_bad_similarity_inputs(sim, idx, message):
    with pytest.raises(DumpError, match=message):
        retrieval_metrics(sim, idx)
