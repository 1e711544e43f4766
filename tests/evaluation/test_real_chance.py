"""The real benchmark's chance levels: exact against enumeration of every ranking."""

from __future__ import annotations

import itertools

import pytest

from clapcap.experiments.real.recordings import chance_recall


def _enumerated(captions_per_clip: list[int], k: int) -> dict[str, float]:
    """Mean R@k over every ordering of the candidates (small cases only)."""
    n = len(captions_per_clip)
    owners = [c for c, m in enumerate(captions_per_clip) for _ in range(m)]
    t2a = [sum(q in order[:k] for q in range(n)) / n for order in itertools.permutations(range(n))]
    a2t = []
    for order in itertools.permutations(range(len(owners))):
        top = {owners[i] for i in order[:k]}
        a2t.append(sum(c in top for c in range(n)) / n)
    return {"t2a": sum(t2a) / len(t2a), "a2t": sum(a2t) / len(a2t)}


@pytest.mark.parametrize("captions,k", [([1, 1, 1, 1], 1), ([2, 2, 2], 2), ([1, 2, 3], 2), ([2, 1], 3)])
def test_chance_recall_matches_enumeration(captions, k):
    got, want = chance_recall(captions, k), _enumerated(captions, k)
    assert got["t2a"] == pytest.approx(want["t2a"], abs=1e-12)
    assert got["a2t"] == pytest.approx(want["a2t"], abs=1e-12)


def test_chance_recall_refuses_empty_input():
    with pytest.raises(ValueError, match="need clips"):
        chance_recall([], 10)
