"""The two-level (seeds x items) bootstrap and the verdict rules."""

from __future__ import annotations

import numpy as np
import pytest

from clapcap.evaluation.seed_bootstrap import (
    SeedComparison,
    SeedScores,
    compare_over_seeds,
    verdict,
)


def _system(rng, base, seed_effects, n_items=200, noise=0.3):
    """Per-item scores: a shared item difficulty plus a per-seed shift plus item noise."""
    rows = [base + s + rng.normal(0, noise, size=n_items) for s in seed_effects]
    return SeedScores(np.array(rows), seeds=tuple(range(len(seed_effects))))


def test_identical_systems_have_zero_effect_and_are_within_noise():
    rng = np.random.default_rng(0)
    a = _system(rng, rng.normal(0.5, 0.2, 200), [0.0, 0.01, -0.01])
    cmp = compare_over_seeds(a, a, paired_seeds=True, n_resamples=500)
    assert cmp.effect == 0.0 and cmp.low == 0.0 and cmp.high == 0.0
    assert verdict(cmp, "greater") == "within noise"
    assert verdict(cmp, "not_less", margin=0.01) == "holds"


def test_consistent_gain_holds_and_its_opposite_claim_is_reversed():
    rng = np.random.default_rng(1)
    base = rng.normal(0.5, 0.2, 200)
    a = _system(rng, base + 0.2, [0.0, 0.01, -0.01])
    b = _system(rng, base, [0.0, 0.01, -0.01])
    cmp = compare_over_seeds(a, b, n_resamples=500)
    assert cmp.low > 0.1
    assert verdict(cmp, "greater") == "holds"
    assert verdict(cmp, "less") == "reversed"
    assert verdict(cmp, "not_greater", margin=0.05) == "reversed"


def test_a_gain_from_one_lucky_seed_does_not_hold():
    """Item-level bootstrap of the lucky seed alone calls it significant; seeds say otherwise."""
    rng = np.random.default_rng(2)
    base = rng.normal(0.5, 0.2, 400)
    a = _system(rng, base, [0.15, -0.05, -0.04], n_items=400, noise=0.1)
    b = _system(rng, base, [0.0, 0.0, 0.0], n_items=400, noise=0.1)
    only_seed0 = compare_over_seeds(SeedScores(a.values[:1], (0,), noise_floor=0.0),
                                    SeedScores(b.values[:1], (0,), noise_floor=0.0), n_resamples=500)
    assert only_seed0.low > 0.1  # what a clip-only bootstrap of one run reports
    cmp = compare_over_seeds(a, b, n_resamples=1000)
    assert cmp.low < 0 < cmp.high
    assert verdict(cmp, "greater") == "within noise"


def test_seed_level_resampling_restores_coverage_that_item_only_bootstrap_lacks():
    """Simulated training: the true effect is 0.05, seeds shift each run by N(0, 0.05)."""
    rng = np.random.default_rng(3)
    covered_two_level = covered_items_only = 0
    n_sim, true = 60, 0.05
    for sim in range(n_sim):
        base = rng.normal(0.5, 0.2, 100)
        a = _system(rng, base + true, rng.normal(0, 0.05, 5), n_items=100, noise=0.1)
        b = _system(rng, base, rng.normal(0, 0.05, 5), n_items=100, noise=0.1)
        two = compare_over_seeds(a, b, n_resamples=300, rng_seed=sim)
        covered_two_level += two.low <= true <= two.high
        one = compare_over_seeds(SeedScores(a.values[:1], (0,), noise_floor=0.0),
                                 SeedScores(b.values[:1], (0,), noise_floor=0.0), n_resamples=300,
                                 rng_seed=sim)
        covered_items_only += one.low <= true <= one.high
    assert covered_two_level / n_sim >= 0.8
    assert covered_items_only / n_sim <= 0.6


def test_single_seed_needs_a_noise_floor_which_widens_the_interval():
    rng = np.random.default_rng(4)
    base = rng.normal(0.5, 0.2, 200)
    a = _system(rng, base + 0.05, [0.0, 0.01, -0.01])
    one = base[None, :] + rng.normal(0, 0.1, (1, 200))
    with pytest.raises(ValueError, match="single training seed"):
        compare_over_seeds(a, SeedScores(one, (0,)))
    narrow = compare_over_seeds(a, SeedScores(one, (0,), noise_floor=0.0), n_resamples=500)
    wide = compare_over_seeds(a, SeedScores(one, (0,), noise_floor=0.05), n_resamples=500)
    assert wide.high - wide.low > 2 * (narrow.high - narrow.low)
    assert wide.noise_floors == {"b": 0.05}


@pytest.mark.parametrize("kwargs, message", [
    ({"values": np.zeros((2, 3)), "seeds": (0,)}, "expected 2 seeds"),
    ({"values": np.zeros((2, 3)), "seeds": (1, 1)}, "distinct"),
    ({"values": np.zeros((0, 3)), "seeds": ()}, "non-empty"),
    ({"values": np.array([[0.0, np.nan]]), "seeds": (0,)}, "finite"),
    ({"values": np.zeros((1, 3)), "seeds": (0,), "noise_floor": -1.0}, "noise_floor"),
])
def test_bad_scores_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SeedScores(**kwargs)


def test_pairing_needs_same_items_and_seeds():
    a = SeedScores(np.zeros((2, 3)), (0, 1))
    with pytest.raises(ValueError, match="same test items"):
        compare_over_seeds(a, SeedScores(np.zeros((2, 4)), (0, 1)))
    with pytest.raises(ValueError, match="same seeds"):
        compare_over_seeds(a, SeedScores(np.zeros((2, 3)), (3, 4)), paired_seeds=True)


def _cmp(low, high, seeds):
    return SeedComparison(effect=(low + high) / 2, low=low, high=high, a=0, b=0,
                          per_seed_effects=dict(enumerate(seeds)), n_seeds_a=3, n_seeds_b=3,
                          n_items=10, confidence=0.95, n_resamples=10, paired_seeds=False)


@pytest.mark.parametrize("low, high, seeds, claim, margin, expected", [
    (0.02, 0.08, [0.03, 0.05, 0.06], "greater", 0.0, "holds"),
    (0.02, 0.08, [0.03, -0.01, 0.06], "greater", 0.0, "within noise"),  # one seed disagrees
    (-0.01, 0.08, [0.03, 0.05, 0.06], "greater", 0.0, "within noise"),
    (-0.08, -0.02, [-0.03, -0.05, -0.06], "greater", 0.0, "reversed"),
    (-0.08, -0.02, [-0.03, -0.05, -0.06], "less", 0.0, "holds"),
    (0.02, 0.08, [0.03, 0.05, 0.06], "less", 0.0, "reversed"),
    (-0.015, 0.03, [0.0, 0.01, -0.005], "not_less", 0.02, "holds"),
    (-0.066, -0.020, [-0.04, -0.05, -0.03], "not_less", 0.02, "within noise"),
    (-0.066, -0.021, [-0.04, -0.05, -0.03], "not_less", 0.02, "reversed"),
    (-0.015, 0.01, [0.0, 0.005, -0.005], "not_greater", 0.02, "holds"),
    (0.03, 0.06, [0.04, 0.05, 0.04], "not_greater", 0.02, "reversed"),
])
def test_verdict_rules(low, high, seeds, claim, margin, expected):
    assert verdict(_cmp(low, high, seeds), claim, margin=margin) == expected


def test_verdict_refuses_unknown_claim_and_negative_margin():
    with pytest.raises(ValueError, match="claim"):
        verdict(_cmp(0, 1, [0.5]), "better")
    with pytest.raises(ValueError, match="margin"):
        verdict(_cmp(0, 1, [0.5]), "greater", margin=-0.1)
