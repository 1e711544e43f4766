"""The harness against published tools on random dumps with several positives per query.

pytrec_eval (trec_eval): success_k, map, map_cut_10, recip_rank.
ranx: hit_rate@k, map, map@10, mrr.
Random float32 similarities have no ties here (checked), so tie conventions do not matter.
"""

from __future__ import annotations

import numpy as np
import pytest

from clapcap.retrieval.metrics import per_query_metrics, similarity

COUNTS = [1, 2, 3, 4, 5, 6, 2, 5] * 4  # 32 clips, 1..6 positives per a2t query


def _runs(sim: np.ndarray, idx: np.ndarray) -> dict[str, tuple[dict, dict]]:
    """qrels and run dicts for both directions, query/doc ids as strings."""
    t2a_qrels = {f"q{q}": {f"d{idx[q]}": 1} for q in range(sim.shape[0])}
    t2a_run = {f"q{q}": {f"d{c}": float(sim[q, c]) for c in range(sim.shape[1])}
               for q in range(sim.shape[0])}
    a2t_qrels = {f"q{c}": {f"d{q}": 1 for q in np.flatnonzero(idx == c)} for c in range(sim.shape[1])}
    a2t_run = {f"q{c}": {f"d{q}": float(sim[q, c]) for q in range(sim.shape[0])}
               for c in range(sim.shape[1])}
    return {"t2a": (t2a_qrels, t2a_run), "a2t": (a2t_qrels, a2t_run)}


@pytest.fixture(params=[0, 1])
def case(request, make_dump):
    dump = make_dump(n_clips=len(COUNTS), captions_per_clip=COUNTS, noise=1.0, seed=request.param)
    sim = similarity(dump).astype(np.float64)
    for row in (sim, sim.T):  # no ties anywhere, so every tool ranks identically
        assert all(np.unique(r).size == r.size for r in row)
    return sim, dump.caption_clip_index


def test_against_pytrec_eval(case):
    import pytrec_eval

    sim, idx = case
    ours = per_query_metrics(sim, idx)
    for direction, (qrels, run) in _runs(sim, idx).items():
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"success", "map", "map_cut", "recip_rank"})
        res = evaluator.evaluate(run)
        for metric, theirs in (("r@1", "success_1"), ("r@5", "success_5"), ("r@10", "success_10"),
                               ("map", "map"), ("map@10", "map_cut_10"), ("mrr", "recip_rank")):
            expected = np.array([res[f"q{i}"][theirs] for i in range(len(ours[direction][metric]))])
            np.testing.assert_allclose(ours[direction][metric], expected, rtol=0, atol=1e-12,
                                       err_msg=f"{direction} {metric} vs trec_eval {theirs}")


def test_against_ranx(case):
    from ranx import Qrels, Run, evaluate

    sim, idx = case
    ours = per_query_metrics(sim, idx)
    names = {"r@1": "hit_rate@1", "r@5": "hit_rate@5", "r@10": "hit_rate@10", "map": "map",
             "map@10": "map@10", "mrr": "mrr"}
    for direction, (qrels, run) in _runs(sim, idx).items():
        res = evaluate(Qrels(qrels), Run(run), list(names.values()), return_mean=False)
        order = [f"q{i}" for i in range(len(ours[direction]["map"]))]
        assert sorted(Qrels(qrels).keys()) == sorted(order)
        # ranx returns per-query arrays in its own (sorted) query order
        position = {q: i for i, q in enumerate(sorted(order))}
        for metric, theirs in names.items():
            got = np.asarray(res[theirs])[[position[q] for q in order]]
            np.testing.assert_allclose(ours[direction][metric], got, rtol=0, atol=1e-12,
                                       err_msg=f"{direction} {metric} vs ranx {theirs}")
