"""Bootstrap intervals and the paired bootstrap test."""

from __future__ import annotations

import numpy as np
import pytest

from clapcap.data.dump import DumpError
from clapcap.retrieval.bootstrap import bootstrap_ci, check_same_queries, paired_bootstrap
from clapcap.retrieval.metrics import aggregate, metric_names, per_query_dump


def test_ci_contains_point_estimate_and_is_seeded(make_dump):
    pq = per_query_dump(make_dump(n_clips=60, captions_per_clip=3, noise=1.2, seed=0))
    point = aggregate(pq)
    ci = bootstrap_ci(pq, n_resamples=300, seed=7)
    assert ci == bootstrap_ci(pq, n_resamples=300, seed=7)
    assert ci != bootstrap_ci(pq, n_resamples=300, seed=8)
    for direction in ("t2a", "a2t"):
        assert set(ci[direction]) == set(metric_names())
        for metric, value in point[direction].items():
            low, high = ci[direction][metric]["low"], ci[direction][metric]["high"]
            assert low <= value <= high, (direction, metric, low, value, high)
        assert ci[direction]["map"]["high"] - ci[direction]["map"]["low"] > 0.01


def test_paired_test_detects_a_real_difference(make_dump):
    good = make_dump(n_clips=80, captions_per_clip=2, noise=0.6, seed=1)
    bad = make_dump(n_clips=80, captions_per_clip=2, noise=0.6, seed=1)
    rng = np.random.default_rng(0)
    bad.text_embeds = bad.text_embeds + 2.0 * rng.normal(size=bad.text_embeds.shape).astype(np.float32)
    check_same_queries(good, bad)
    res = paired_bootstrap(per_query_dump(good), per_query_dump(bad), n_resamples=400, seed=0)
    for direction in ("t2a", "a2t"):
        row = res[direction]["map"]
        assert row["difference"] == pytest.approx(row["a"] - row["b"])
        assert row["difference"] > 0.1 and row["ci"]["low"] > 0
        assert row["p_value"] < 0.01


def test_paired_test_on_identical_dumps_finds_nothing(make_dump):
    pq = per_query_dump(make_dump(n_clips=40, captions_per_clip=2, seed=2))
    res = paired_bootstrap(pq, pq, n_resamples=200, seed=0)
    for direction in ("t2a", "a2t"):
        for row in res[direction].values():
            assert row["difference"] == 0.0 and row["p_value"] == 1.0
            assert row["ci"] == {"low": 0.0, "high": 0.0}


def test_different_queries_are_rejected(make_dump):
    a = make_dump(n_clips=10, captions_per_clip=2)
    b = make_dump(n_clips=10, captions_per_clip=2)
    b.captions[3] = "something else"
    with pytest.raises(DumpError, match="differ in captions at row 3"):
        check_same_queries(a, b)
    c = make_dump(n_clips=11, captions_per_clip=2)
    with pytest.raises(DumpError, match="same queries"):
        check_same_queries(a, c)
    d = make_dump(n_clips=10, captions_per_clip=2)
    d.clip_ids = list(reversed(d.clip_ids))
    with pytest.raises(DumpError, match="differ in clip_ids at row 0"):
        check_same_queries(a, d)


def test_bad_bootstrap_arguments(make_dump):
    pq = per_query_dump(make_dump(n_clips=5, captions_per_clip=1))
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_ci(pq, n_resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci(pq, confidence=1.5)


@pytest.mark.parametrize("n", [1, 2, 7, 10])
def test_resampled_statistics_equal_explicit_resample(n):
    from clapcap.retrieval.bootstrap import _count_chunks, _point, _resampled

    rng = np.random.default_rng(n)
    values = {"map": rng.random(n), "rank": rng.integers(1, 6, n).astype(float)}
    draws = np.random.default_rng(0)
    for counts in _count_chunks(n, 25, draws):
        stats = _resampled(values, counts)
        for row, c in zip(stats, counts, strict=True):
            take = np.repeat(np.arange(n), c)  # the resample, explicitly
            expected = _point({k: v[take] for k, v in values.items()})
            np.testing.assert_allclose(row, [expected["map"], expected["median_rank"]], atol=1e-12)
