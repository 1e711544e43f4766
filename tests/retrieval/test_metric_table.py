"""The one table of retrieval metrics: every key the library computes is in it, each
reader aggregates through it, and a key in no family is refused (or, for item scores of
another family, averaged)."""

from __future__ import annotations

import numpy as np
import pytest

from clapcap.retrieval import table
from clapcap.retrieval.bootstrap import bootstrap_ci, paired_bootstrap
from clapcap.retrieval.ir_metrics import ir_per_query
from clapcap.retrieval.metrics import aggregate, metric_names, per_query_metrics, ranked_similarity


def _sim():
    rng = np.random.default_rng(0)
    return rng.normal(size=(12, 5)), np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 0, 1])


def test_every_key_the_library_computes_is_in_the_table():
    sim, idx = _sim()
    pq = per_query_metrics(sim, idx, ks=(1, 3))
    ranked = ranked_similarity(sim, idx)
    ir = ir_per_query(ranked["a2t"], 5, ks=(1, 3))
    for key in [*pq["t2a"], *pq["a2t"], *ir, "map_norm_min@10", "accuracy"]:
        assert table.metric(key).per_query == key
    assert [m.name for m in table.core((1, 3))] == metric_names((1, 3))
    assert metric_names((1, 3)) == ["r@1", "r@3", "map", "map@10", "mrr", "median_rank"]


def test_rows_of_the_table():
    r10, rank, ndcg = table.metric("r@10"), table.metric("rank"), table.metric("ndcg@5")
    assert (r10.name, r10.aggregate, r10.label, r10.higher_is_better) == ("r@10", "mean", "R@10", True)
    assert (rank.name, rank.aggregate, rank.label, rank.higher_is_better) == ("median_rank", "median",
                                                                              "median rank", False)
    assert (ndcg.name, ndcg.label) == ("ndcg@5", "nDCG@5")
    assert table.metric("map@10").label == "mAP@10" and table.metric("map").label == "mAP"
    assert table.by_name("median_rank") == rank
    assert [table.metric(k).label for k in table.LEADERBOARD] == ["R@1", "R@5", "R@10", "mAP@10"]
    for bad in ("r@0", "r@", "spider", "map@x", "rank@3"):
        with pytest.raises(KeyError, match="no retrieval metric"):
            table.metric(bad)
    other = table.metric("fense", strict=False)  # a captioner's item score: the mean, its own name
    assert (other.name, other.aggregate) == ("fense", "mean")


def test_aggregate_and_bootstrap_read_the_table():
    values = {"r@1": np.array([1.0, 0.0, 0.0, 1.0]), "rank": np.array([1.0, 4.0, 9.0, 2.0]),
              "ndcg@3": np.array([1.0, 0.5, 0.0, 1.0])}
    agg = aggregate({"t2a": values})["t2a"]
    assert agg == {"r@1": 0.5, "median_rank": 3.0, "ndcg@3": 0.625}
    assert list(agg) == ["r@1", "median_rank", "ndcg@3"]  # the per-query order
    ci = bootstrap_ci({"t2a": values}, n_resamples=200)["t2a"]
    assert set(ci) == {"r@1", "median_rank", "ndcg@3"}
    assert ci["median_rank"]["low"] >= 1.0 and ci["median_rank"]["high"] <= 9.0
    with pytest.raises(KeyError, match="no retrieval metric"):
        aggregate({"t2a": {"spider": np.ones(3)}})
    same = paired_bootstrap({"c": {"fense": np.ones(4) / 2}}, {"c": {"fense": np.ones(4) / 4}}, n_resamples=50)
    assert same["c"]["fense"]["difference"] == pytest.approx(0.25)


def test_model_card_metrics_are_table_keys():
    from clapcap.errors import ConfigError
    from clapcap.reporting.model_card import ModelCardParams

    assert ModelCardParams(metrics=["r@1", "median_rank", "map@10"]).metrics[1] == "median_rank"
    with pytest.raises(ConfigError, match="model_cards.metrics: 'R@1' is no retrieval metric"):
        ModelCardParams(metrics=["R@1"])
