"""Zero-shot metrics against an independent reference (scikit-learn), and query building."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from clapcap.experiments.robust.benchmark import queries, zero_shot
from clapcap.retrieval.ranking import average_precision_min_norm


def test_ap_at_10_matches_sklearn_when_all_positives_fit():
    from sklearn.metrics import average_precision_score

    rng = np.random.default_rng(0)
    scores = rng.standard_normal((30, 8))
    pos = rng.random((30, 8)) < 0.3
    pos[np.arange(30), rng.integers(0, 8, 30)] = True
    ours = average_precision_min_norm(scores, pos, 10)  # k >= n_classes: plain AP
    ref = [average_precision_score(pos[i], scores[i]) for i in range(30)]
    assert np.allclose(ours, ref)


def test_ap_cutoff_and_ties_are_pessimistic():
    scores = np.array([[3.0, 2.0, 1.0, 0.5]])
    pos = np.array([[False, False, True, True]])
    assert average_precision_min_norm(scores, pos, 3)[0] == pytest.approx((1 / 3) / 2)
    tied = average_precision_min_norm(np.zeros((1, 4)), np.array([[True, False, False, False]]), 10)
    assert tied[0] == pytest.approx(1 / 4)


def test_zero_shot_accuracy():
    audio = np.eye(3)
    labels = np.eye(3)[[0, 2, 1]]
    pos = np.array([[True, False, False], [False, True, True], [False, False, True]])
    out = zero_shot(audio, labels, pos)
    assert out["accuracy"].tolist() == [1.0, 1.0, 0.0]


def test_queries_skip_failed_views():
    df = pd.DataFrame({"clip_id": ["a", "b", "c"],
                       "paraphrases_v2": [["x", None], [None, ""], ["y", "z"]]})
    rows, texts, index = queries(df, "paraphrases_v2")
    assert rows.tolist() == [0, 2] and texts == ["x", "y", "z"] and index.tolist() == [0, 1, 1]
    with pytest.raises(ValueError, match="not in the manifest"):
        queries(df, "paraphrases_v3")
