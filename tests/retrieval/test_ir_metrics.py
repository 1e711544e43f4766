"""Cut-off metrics (ndcg@k, precision@k, recall@k, mrr@k, map@k, r@k) on pessimistic ranks.

Checked by hand on tiny cases, against the independent reference (per query, 1e-12, random
multi-positive dumps with ties), against the harness's own r@k / map@10 / mrr (bit for bit),
against pytrec_eval (trec_eval) with ties whose document ids make trec_eval's tie order
pessimistic, against MTEB's MRR@k code, and against ranx on tie-free scores.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from retrieval_cases import a2t_case

from clapcap.data.dump import EmbeddingDump
from clapcap.retrieval import ir_metrics
from clapcap.retrieval.independent import independent_ir_per_query
from clapcap.retrieval.ir_metrics import check_ks, ir_metric_names, ir_per_query
from clapcap.retrieval.metrics import per_query_dump, ranked_dump, ranked_similarity, similarity
from clapcap.retrieval.ranking import Ranked

MTEB_KS = (1, 3, 5, 10, 20, 100, 1000)
KS = (1, 2, 3, 5, 10, 1000)


def _log2_disc(r: int) -> float:
    return 1.0 / math.log2(r + 1)


def _per_query(sim: np.ndarray, idx: np.ndarray, ks=KS) -> dict[str, dict[str, np.ndarray]]:
    ranked = ranked_similarity(sim, idx)
    n = {"t2a": sim.shape[0], "a2t": sim.shape[1]}
    return {d: ir_per_query(ranked[d], n[d], ks) for d in ("t2a", "a2t")}


# ------------------------------------------------------------------------- by hand
def test_three_positives_at_ranks_2_8_12_by_hand():
    sim, idx = a2t_case([2, 8, 12], n_captions=12)
    pq = {k: v[0] for k, v in _per_query(sim, idx)["a2t"].items()}
    ideal3 = 1 + _log2_disc(2) + _log2_disc(3)  # 1 + 0.6309 + 0.5
    assert (pq["r@1"], pq["r@2"], pq["r@1000"]) == (0.0, 1.0, 1.0)
    assert pq["map@10"] == pytest.approx((1 / 2 + 2 / 8) / 3, abs=1e-15)
    assert pq["map@1000"] == pytest.approx((1 / 2 + 2 / 8 + 3 / 12) / 3, abs=1e-15)
    assert pq["ndcg@1"] == 0.0
    assert pq["ndcg@2"] == pytest.approx(_log2_disc(2) / (1 + _log2_disc(2)), abs=1e-15)
    assert pq["ndcg@10"] == pytest.approx((_log2_disc(2) + _log2_disc(8)) / ideal3, abs=1e-15)
    assert pq["ndcg@10"] == pytest.approx(0.4441, abs=1e-4)  # (0.6309 + 0.3155) / 2.1309
    assert pq["ndcg@1000"] == pytest.approx((_log2_disc(2) + _log2_disc(8) + _log2_disc(12)) / ideal3,
                                            abs=1e-15)
    assert (pq["mrr@1"], pq["mrr@2"], pq["mrr@1000"]) == (0.0, 0.5, 0.5)
    assert (pq["recall@1"], pq["recall@10"], pq["recall@1000"]) == (0.0, 2 / 3, 1.0)
    assert (pq["precision@1"], pq["precision@10"], pq["precision@1000"]) == (0.0, 0.2, 3 / 1000)


def test_pessimistic_ties_by_hand():
    # caption 0 (clip 0) ties its positive with clip 1: rank 2. Clip 0 in a2t: positives
    # captions 0 and 2 both at 0.5, tied with caption 3 (clip 1) at 0.5; caption 1 at 0.9.
    sim = np.array([[0.5, 0.5], [0.9, 0.0], [0.5, 0.1], [0.5, 0.2]])
    idx = np.array([0, 1, 0, 1])
    pq = _per_query(sim, idx)
    t2a = {k: v[0] for k, v in pq["t2a"].items()}
    assert (t2a["r@1"], t2a["ndcg@1"], t2a["mrr@1"], t2a["recall@1"], t2a["precision@1"]) == (0, 0, 0, 0, 0)
    assert t2a["ndcg@2"] == pytest.approx(_log2_disc(2), abs=1e-15)
    assert (t2a["mrr@2"], t2a["recall@2"], t2a["precision@2"]) == (0.5, 1.0, 0.5)
    # clip 0: candidates >= 0.5 that are not positive: captions 1 and 3, so ranks 3 and 4
    a2t = {k: v[0] for k, v in pq["a2t"].items()}
    assert (a2t["r@2"], a2t["r@3"], a2t["mrr@3"]) == (0.0, 1.0, 1 / 3)
    assert a2t["ndcg@10"] == pytest.approx((_log2_disc(3) + _log2_disc(4)) / (1 + _log2_disc(2)),
                                           abs=1e-15)
    assert a2t["map@10"] == pytest.approx((1 / 3 + 2 / 4) / 2, abs=1e-15)
    assert (a2t["recall@3"], a2t["precision@3"], a2t["precision@5"]) == (0.5, 1 / 3, 2 / 5)


def test_every_positive_first_scores_one_and_constant_scores_rank_last():
    sim = np.eye(3)[[0, 0, 1, 2, 2, 2]]  # captions score 1 on their own clip only
    idx = np.array([0, 0, 1, 2, 2, 2])
    for direction, values in _per_query(sim, idx).items():
        for k in KS:
            assert (values[f"ndcg@{k}"] == 1.0).all(), (direction, k)
            assert (values[f"mrr@{k}"] == 1.0).all() and (values[f"r@{k}"] == 1.0).all()
    flat = _per_query(np.zeros((6, 3)), idx)
    assert (flat["t2a"]["ndcg@2"] == 0).all() and (flat["t2a"]["ndcg@3"] == 0.5).all()
    # a2t clip 2: 3 positives among 6 tied captions rank 4, 5, 6
    assert flat["a2t"]["recall@5"][2] == 2 / 3 and flat["a2t"]["mrr@5"][2] == 0.25


def test_names_and_families():
    assert ir_metric_names((1, 10))[:2] == ["r@1", "r@10"]
    assert len(ir_metric_names(MTEB_KS)) == 6 * len(MTEB_KS)
    sim, idx = a2t_case([1, 3], n_captions=5)
    assert list(_per_query(sim, idx, ks=(1, 10))["a2t"]) == ir_metric_names((1, 10))


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("ks", [(), (0,), (True,), (1.5,), (5, 5)])
def test_bad_ks_are_refused(ks):
    with pytest.raises(ValueError, match="ks: expected"):
        check_ks(ks)


def _pairs(query, rank, within) -> Ranked:
    q = np.asarray(query)
    return Ranked(np.arange(q.size), q, np.asarray(rank), np.asarray(within))


@pytest.mark.parametrize(("pairs", "n", "message"), [
    (_pairs([1, 0], [1, 1], [1, 1]), 2, "sorted by query"),
    (_pairs([0, 0], [1, 2], [1, 2]), 2, "query 1 has no positive"),
    (_pairs([0, 2], [1, 1], [1, 1]), 2, "must lie in 0..1"),
    (_pairs([0, 0], [2, 2], [1, 2]), 1, "ranks must increase"),
    (_pairs([0], [0], [1]), 1, "rank 0 below"),
    (_pairs([0], [1, 2], [1]), 1, "one length"),
    (_pairs([], [], []), 1, "expected >= 1 query"),
])
def test_malformed_ranks_are_refused(pairs, n, message):
    with pytest.raises(ValueError, match=message):
        ir_per_query(pairs, n, (1,))


# ------------------------------------------------------ against the independent reference
def _dump(audio, text, idx) -> EmbeddingDump:
    return EmbeddingDump(audio_embeds=np.asarray(audio, dtype=np.float32),
                         text_embeds=np.asarray(text, dtype=np.float32),
                         caption_clip_index=np.asarray(idx, dtype=np.int64),
                         clip_ids=[f"c{i}" for i in range(len(audio))],
                         captions=[f"t{i}" for i in range(len(text))])


def tied_dump(seed: int, counts: list[int], dim: int = 3, span: int = 2) -> EmbeddingDump:
    """Small non-negative integer embeddings: duplicate rows, zero rows, many exact ties
    (non-negative entries never cancel, so equal cosines stay equal after float32 rounding)."""
    rng = np.random.default_rng(seed)
    idx = np.repeat(np.arange(len(counts)), counts)
    rng.shuffle(idx)
    audio = rng.integers(0, span + 1, size=(len(counts), dim))
    text = rng.integers(0, span + 1, size=(idx.size, dim))
    return _dump(audio, text, idx)


def _max_delta(dump: EmbeddingDump, ks=MTEB_KS, **kwargs) -> tuple[float, str]:
    ranked = ranked_dump(dump, **kwargs)
    ours = {"t2a": ir_per_query(ranked["t2a"], dump.n_captions, ks),
            "a2t": ir_per_query(ranked["a2t"], dump.n_clips, ks)}
    ref = independent_ir_per_query(dump.audio_embeds, dump.text_embeds, dump.caption_clip_index, ks=ks)
    worst, where = 0.0, ""
    for direction in ("t2a", "a2t"):
        for name in ir_metric_names(ks):
            theirs = np.array([q[name] for q in ref[direction]])
            delta = float(np.max(np.abs(ours[direction][name] - theirs)))
            if delta > worst:
                worst, where = delta, f"{direction} {name}"
    return worst, where


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_independent_reference_on_tied_multi_positive_dumps(seed):
    counts = [1, 2, 3, 4, 5, 6, 2, 5] * 4  # 32 clips, 1..6 positives per a2t query
    dump = tied_dump(seed, counts)
    sim = similarity(dump)
    assert any(np.unique(r).size < r.size for r in sim.T), "the case must have ties"
    worst, where = _max_delta(dump)
    assert worst <= 1e-12, (worst, where)


@pytest.mark.parametrize("screen", [True, False])
def test_agrees_on_a_noisy_dump_either_path(make_dump, screen):
    dump = make_dump(n_clips=40, captions_per_clip=[1, 3, 5, 2] * 10, noise=1.0, seed=4)
    worst, where = _max_delta(dump, screen=screen)
    assert worst <= 1e-12, (worst, where)


@st.composite
def dump_cases(draw) -> EmbeddingDump:
    counts = draw(st.lists(st.integers(1, 4), min_size=1, max_size=7))
    idx = np.repeat(np.arange(len(counts)), counts)
    idx = idx[list(draw(st.permutations(range(idx.size))))]
    dim, span = draw(st.integers(1, 3)), draw(st.sampled_from([1, 2, 9]))
    cells = st.lists(st.integers(0, span), min_size=dim, max_size=dim)
    audio = draw(st.lists(cells, min_size=len(counts), max_size=len(counts)))
    text = draw(st.lists(cells, min_size=idx.size, max_size=idx.size))
    return _dump(audio, text, idx)


@given(dump_cases(), st.sampled_from([1, 64, 1 << 28]))
def test_agrees_with_independent_reference_property(dump, block_bytes):
    worst, where = _max_delta(dump, ks=(1, 2, 3, 5, 10), max_block_bytes=block_bytes)
    assert worst <= 1e-12, (worst, where)


def test_a_broken_discount_is_caught(monkeypatch):
    def off_by_one(query, rank, n_queries, k):
        return original(query, rank + 1, n_queries, k)

    original = ir_metrics.ndcg_at_k
    monkeypatch.setattr(ir_metrics, "ndcg_at_k", off_by_one)
    worst, where = _max_delta(tied_dump(0, [1, 2, 3, 4, 5] * 4))
    assert worst > 1e-3 and where.split()[1].startswith("ndcg@")


def test_shared_keys_equal_the_harness_bit_for_bit(make_dump):
    # one key, one definition: r@k, map@10 and (uncut) mrr are the harness's numbers
    dump = tied_dump(3, [1, 2, 3, 4, 5, 6] * 5)
    harness = per_query_dump(dump, ks=MTEB_KS)
    ranked = ranked_dump(dump)
    for direction, n in (("t2a", dump.n_captions), ("a2t", dump.n_clips)):
        ours = ir_per_query(ranked[direction], n, MTEB_KS)
        for k in MTEB_KS:
            np.testing.assert_array_equal(ours[f"r@{k}"], harness[direction][f"r@{k}"])
        np.testing.assert_array_equal(ours["map@10"], harness[direction]["map@10"])
        np.testing.assert_array_equal(ours["mrr@1000"], harness[direction]["mrr"])  # every rank <= 1000
        if direction == "t2a":  # one positive: recall@k is r@k
            for k in MTEB_KS:
                np.testing.assert_array_equal(ours[f"recall@{k}"], ours[f"r@{k}"])


# ------------------------------------------------------------ against published tools
def _runs(sim: np.ndarray, idx: np.ndarray) -> dict[str, tuple[dict, dict]]:
    """qrels and runs per direction. Positives are named ``a...`` and non-positives ``z...``:
    trec_eval and MTEB break a score tie by document id, descending, so every non-positive
    comes before a tied positive, which is clapcap's pessimistic rule."""
    out = {}
    for direction, scores, positive in (
            ("t2a", sim, lambda q, c: idx[q] == c),
            ("a2t", sim.T, lambda q, c: idx[c] == q)):
        qrels, run = {}, {}
        for q, row in enumerate(scores):
            names = [f"a{c:05d}" if positive(q, c) else f"z{c:05d}" for c in range(row.size)]
            qrels[f"q{q:05d}"] = {n: 1 for n in names if n[0] == "a"}
            run[f"q{q:05d}"] = {n: float(s) for n, s in zip(names, row, strict=True)}
        out[direction] = (qrels, run)
    return out


def _mteb_mrr(qrels: dict, results: dict, k_values) -> dict[str, list[float]]:
    """mteb._evaluators.retrieval_metrics.mrr (mteb a905523), copied: ties by doc id descending."""
    out: dict[str, list[float]] = {f"MRR@{k}": [] for k in k_values}
    for query_id, doc_scores in results.items():
        top = sorted(doc_scores.items(), key=lambda item: (item[1], item[0]), reverse=True)[0:max(k_values)]
        relevant = {d for d in qrels[query_id] if qrels[query_id][d] > 0}
        for k in k_values:
            rr = 0.0
            for rank, hit in enumerate(top[0:k]):
                if hit[0] in relevant:
                    rr = 1.0 / (rank + 1)
                    break
            out[f"MRR@{k}"].append(rr)
    return out


@pytest.fixture(params=[0, 1])
def tied_sim(request):
    rng = np.random.default_rng(request.param)
    counts = [1, 2, 3, 4, 5, 6, 2, 5] * 3
    idx = np.repeat(np.arange(len(counts)), counts)
    sim = rng.integers(-2, 3, size=(idx.size, len(counts))).astype(np.float64)  # ties everywhere
    return sim, idx


def test_against_pytrec_eval_with_ties(tied_sim):
    import pytrec_eval

    sim, idx = tied_sim
    ours = _per_query(sim, idx, MTEB_KS)
    names = {"r": "success_{k}", "map": "map_cut_{k}", "ndcg": "ndcg_cut_{k}", "recall": "recall_{k}",
             "precision": "P_{k}"}
    for direction, (qrels, run) in _runs(sim, idx).items():
        measures = {f"{m}.{','.join(map(str, MTEB_KS))}" for m in ("success", "map_cut", "ndcg_cut",
                                                                     "recall", "P")}
        res = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
        order = sorted(res)
        for family, theirs in names.items():
            for k in MTEB_KS:
                expected = np.array([res[q][theirs.format(k=k)] for q in order])
                np.testing.assert_allclose(ours[direction][f"{family}@{k}"], expected, rtol=0, atol=1e-12,
                                           err_msg=f"{direction} {family}@{k} vs trec_eval")
        mrr = _mteb_mrr(qrels, {q: run[q] for q in order}, MTEB_KS)
        for k in MTEB_KS:
            np.testing.assert_allclose(ours[direction][f"mrr@{k}"], mrr[f"MRR@{k}"], rtol=0, atol=1e-12,
                                       err_msg=f"{direction} mrr@{k} vs MTEB's mrr")


def test_against_ranx_without_ties(make_dump):
    from ranx import Qrels, Run, evaluate

    dump = make_dump(n_clips=24, captions_per_clip=[1, 2, 3, 4, 5, 6] * 4, noise=1.0, seed=5)
    sim = similarity(dump).astype(np.float64)
    for row in (*sim, *sim.T):  # no ties: every tool ranks identically
        assert np.unique(row).size == row.size
    ours = _per_query(sim, dump.caption_clip_index, MTEB_KS)
    families = {"r": "hit_rate", "map": "map", "ndcg": "ndcg", "mrr": "mrr", "recall": "recall",
                "precision": "precision"}
    for direction, (qrels, run) in _runs(sim, dump.caption_clip_index).items():
        metrics = [f"{m}@{k}" for m in families.values() for k in MTEB_KS]
        res = evaluate(Qrels(qrels), Run(run), metrics, return_mean=False)
        for family, theirs in families.items():
            for k in MTEB_KS:
                np.testing.assert_allclose(ours[direction][f"{family}@{k}"], np.asarray(res[f"{theirs}@{k}"]),
                                           rtol=0, atol=1e-12, err_msg=f"{direction} {family}@{k} vs ranx")
